// Package tpch benchmarks the SQL endpoint on TPC-H queries 1 and 6 at
// scale factor 1 against DuckDB reading the same Parquet file directly,
// in one run on one machine; see tpch_test.go and docs/benchmarks.md.
//
//	go test ./bench/tpch -run '^$' -bench TPCH -benchtime 1x -timeout 60m
//
// FLOE_TPCH_DATA names a directory that keeps the generated lineitem
// Parquet file between runs (default: a fresh temporary directory);
// FLOE_TPCH_SF sets the scale factor (default 1); FLOE_TPCH_RUNS the warm
// runs per query (default 7).
package tpch
