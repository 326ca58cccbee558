package ingest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
)

// MaxPartitionFields bounds the fields of a partition spec.
const MaxPartitionFields = 64

// firstPartitionFieldID is the id of the first partition field, as the
// Iceberg spec assigns them.
const firstPartitionFieldID = 1000

var sprintf = fmt.Sprintf

// ParsePartition reads a partition spec for schema sc: a comma-separated
// list of partition fields, each a column (identity) or a transform of one:
//
//	region, day(ts), bucket(16, id), truncate(4, name)
//
// Transforms are identity(col), year(col), month(col), day(col),
// hour(col), bucket(N, col) and truncate(W, col); the Iceberg spellings
// bucket[N](col) and truncate[W](col) are accepted too, and "years",
// "months", "days", "hours" as aliases. Column names match the schema
// case-insensitively when there is no exact match. An empty string is the
// unpartitioned spec.
func ParsePartition(s string, sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return *iceberg.UnpartitionedSpec, nil
	}
	parts, err := splitTop(s)
	if err != nil {
		return iceberg.PartitionSpec{}, floe.E(floe.Invalid, "partition", "partition spec %q: %s", s, err)
	}
	if len(parts) > MaxPartitionFields {
		return iceberg.PartitionSpec{}, floe.E(floe.Invalid, "partition", "partition spec: %d fields, at most %d", len(parts), MaxPartitionFields)
	}
	fields := make([]iceberg.PartitionField, 0, len(parts))
	names := map[string]bool{}
	for i, p := range parts {
		f, err := parsePartitionField(strings.TrimSpace(p), sc)
		if err != nil {
			return iceberg.PartitionSpec{}, floe.E(floe.Invalid, "partition", "partition field %q: %s", strings.TrimSpace(p), err)
		}
		for _, g := range fields {
			if g.SourceIDs[0] == f.SourceIDs[0] && g.Transform.Equals(f.Transform) {
				return iceberg.PartitionSpec{}, floe.E(floe.Invalid, "partition", "partition field %q repeats an earlier one", strings.TrimSpace(p))
			}
		}
		if names[f.Name] {
			return iceberg.PartitionSpec{}, floe.E(floe.Invalid, "partition", "partition field name %q appears twice", f.Name)
		}
		names[f.Name] = true
		f.FieldID = firstPartitionFieldID + i
		fields = append(fields, f)
	}
	return iceberg.NewPartitionSpec(fields...), nil
}

func parsePartitionField(s string, sc *iceberg.Schema) (iceberg.PartitionField, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		col, err := column(s, sc)
		if err != nil {
			return iceberg.PartitionField{}, err
		}
		return partitionField(col, iceberg.IdentityTransform{}, col.Name)
	}
	if !strings.HasSuffix(s, ")") {
		return iceberg.PartitionField{}, errf("want transform(column)")
	}
	name := strings.ToLower(strings.TrimSpace(s[:open]))
	args := strings.Split(s[open+1:len(s)-1], ",")
	// bucket[16](id) and truncate[4](name): the width in brackets.
	if lb := strings.IndexByte(name, '['); lb > 0 && strings.HasSuffix(name, "]") {
		args = append([]string{name[lb+1 : len(name)-1]}, args...)
		name = name[:lb]
	}
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	switch name {
	case "identity", "year", "years", "month", "months", "day", "days", "hour", "hours", "void":
		if len(args) != 1 {
			return iceberg.PartitionField{}, errf("%s takes one column", name)
		}
		col, err := column(args[0], sc)
		if err != nil {
			return iceberg.PartitionField{}, err
		}
		var t iceberg.Transform
		suffix := ""
		switch strings.TrimSuffix(name, "s") {
		case "identity":
			t = iceberg.IdentityTransform{}
		case "year":
			t, suffix = iceberg.YearTransform{}, "_year"
		case "month":
			t, suffix = iceberg.MonthTransform{}, "_month"
		case "day":
			t, suffix = iceberg.DayTransform{}, "_day"
		case "hour":
			t, suffix = iceberg.HourTransform{}, "_hour"
		case "void":
			t, suffix = iceberg.VoidTransform{}, "_null"
		}
		return partitionField(col, t, col.Name+suffix)
	case "bucket", "truncate":
		if len(args) != 2 {
			return iceberg.PartitionField{}, errf("%s takes a width and a column: %s(N, column)", name, name)
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 1 || n > 1<<20 {
			return iceberg.PartitionField{}, errf("%s width %q: want a whole number from 1 to %d", name, args[0], 1<<20)
		}
		col, err := column(args[1], sc)
		if err != nil {
			return iceberg.PartitionField{}, err
		}
		if name == "bucket" {
			return partitionField(col, iceberg.BucketTransform{NumBuckets: n}, fmt.Sprintf("%s_bucket_%d", col.Name, n))
		}
		return partitionField(col, iceberg.TruncateTransform{Width: n}, fmt.Sprintf("%s_trunc_%d", col.Name, n))
	}
	return iceberg.PartitionField{}, errf("unknown transform %q (want identity, year, month, day, hour, bucket(N, col) or truncate(W, col))", name)
}

// column finds a top-level column of sc by name: exactly, else ignoring case.
func column(name string, sc *iceberg.Schema) (iceberg.NestedField, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return iceberg.NestedField{}, errf("missing column name")
	}
	if f, ok := sc.FindFieldByName(name); ok {
		return f, nil
	}
	if f, ok := sc.FindFieldByNameCaseInsensitive(name); ok {
		return f, nil
	}
	var have []string
	for _, f := range sc.Fields() {
		have = append(have, f.Name)
	}
	return iceberg.NestedField{}, errf("no column %q in the schema (columns: %s)", name, strings.Join(have, ", "))
}

func partitionField(col iceberg.NestedField, t iceberg.Transform, name string) (iceberg.PartitionField, error) {
	if !t.CanTransform(col.Type) {
		return iceberg.PartitionField{}, errf("transform %s cannot apply to column %q of type %s", t, col.Name, col.Type)
	}
	return iceberg.PartitionField{SourceIDs: []int{col.ID}, Name: name, Transform: t}, nil
}
