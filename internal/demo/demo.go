// Package demo generates a small CRM dataset (accounts, opportunities,
// activities) and loads it into Floe through the Iceberg REST API, exactly as
// an external engine would, so a newcomer sees real tables at once.
package demo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	// s3:// table locations: files go through Floe's S3 endpoint with vended credentials.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// Namespace is where the demo tables live.
const Namespace = "crm"

// Sizes of the generated tables.
const (
	Accounts      = 500
	Opportunities = 2000
	Activities    = 10000
)

// Load creates namespace crm and its three tables through the REST catalog at
// uri (with a bearer token), unless they already exist. roots, if set, are
// the CAs trusted for the catalog's and the S3 endpoint's certificates
// (floe serve --tls-self-signed); nil trusts the system's.
func Load(ctx context.Context, uri, token string, roots *x509.CertPool) error {
	opts := []rest.Option{}
	if token != "" {
		opts = append(opts, rest.WithOAuthToken(token))
	}
	if roots != nil {
		tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		opts = append(opts, rest.WithTLSConfig(tc))
		// The data files go through the S3 endpoint: same trust.
		ctx = utils.WithAwsConfig(ctx, &aws.Config{HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}})
	}
	cat, err := rest.NewCatalog(ctx, "floe", uri, opts...)
	if err != nil {
		return fmt.Errorf("demo: connect: %w", err)
	}
	ns := table.Identifier{Namespace}
	if err := cat.CreateNamespace(ctx, ns, iceberg.Properties{"comment": "Generated CRM demo data"}); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("demo: namespace: %w", err)
	}
	rng := rand.New(rand.NewPCG(42, 7))
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, t := range []struct {
		name  string
		sc    *iceberg.Schema
		spec  *iceberg.PartitionSpec
		build func(*rand.Rand, time.Time) arrow.Table
	}{
		{"accounts", accountsSchema(), nil, accounts},
		{"opportunities", opportunitiesSchema(), monthSpec(4, "close_month"), opportunities},
		{"activities", activitiesSchema(), daySpec(4, "occurred_day"), activities},
	} {
		id := table.Identifier{Namespace, t.name}
		if ok, err := cat.CheckTableExists(ctx, id); err != nil {
			return fmt.Errorf("demo: %s: %w", t.name, err)
		} else if ok {
			continue
		}
		var copts []icecat.CreateTableOpt
		if t.spec != nil {
			copts = append(copts, icecat.WithPartitionSpec(t.spec))
		}
		tbl, err := cat.CreateTable(ctx, id, t.sc, copts...)
		if err != nil {
			return fmt.Errorf("demo: create %s: %w", t.name, err)
		}
		data := t.build(rng, base)
		_, err = tbl.AppendTable(ctx, data, 4096, nil)
		data.Release()
		if err != nil {
			return fmt.Errorf("demo: load %s: %w", t.name, err)
		}
	}
	return nil
}

func monthSpec(src int, name string) *iceberg.PartitionSpec {
	s := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{src}, FieldID: 1000, Transform: iceberg.MonthTransform{}, Name: name})
	return &s
}

func daySpec(src int, name string) *iceberg.PartitionSpec {
	s := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{src}, FieldID: 1000, Transform: iceberg.DayTransform{}, Name: name})
	return &s
}

func accountsSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "account_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "industry", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "annual_revenue", Type: iceberg.PrimitiveTypes.Float64},
		// For the governance examples of the docs: a region to filter rows
		// by and contact details to hide or mask.
		iceberg.NestedField{ID: 6, Name: "region", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 7, Name: "email", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 8, Name: "phone", Type: iceberg.PrimitiveTypes.String},
	)
}

func opportunitiesSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "opportunity_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "account_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "stage", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "close_date", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	)
}

func activitiesSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "activity_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "account_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "kind", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "occurred_at", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 5, Name: "notes", Type: iceberg.PrimitiveTypes.String},
	)
}

var (
	industries = []string{"Retail", "Manufacturing", "Finance", "Healthcare", "Software", "Energy", "Logistics"}
	countries  = []string{"DE", "FR", "GB", "US", "JP", "BR", "IN", "NL"}
	stages     = []string{"Prospecting", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost"}
	kinds      = []string{"call", "email", "meeting", "demo", "support"}
	// regions maps each country to its sales region.
	regions = map[string]string{"DE": "EMEA", "FR": "EMEA", "GB": "EMEA", "NL": "EMEA", "US": "AMER", "BR": "AMER", "JP": "APAC", "IN": "APAC"}
)

func toTable(sc *iceberg.Schema, fill func(*array.RecordBuilder)) arrow.Table {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		panic(fmt.Sprintf("demo schema: %v", err)) // the schemas above are fixed and valid
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	fill(b)
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
}

func accounts(rng *rand.Rand, _ time.Time) arrow.Table {
	return toTable(accountsSchema(), func(b *array.RecordBuilder) {
		for i := 1; i <= Accounts; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("Account %03d GmbH", i))
			b.Field(2).(*array.StringBuilder).Append(industries[rng.IntN(len(industries))])
			country := countries[rng.IntN(len(countries))]
			b.Field(3).(*array.StringBuilder).Append(country)
			b.Field(4).(*array.Float64Builder).Append(float64(rng.IntN(500_000_000)) / 100)
			// Derived, not drawn: the other tables' random data stays as it was.
			b.Field(5).(*array.StringBuilder).Append(regions[country])
			b.Field(6).(*array.StringBuilder).Append(fmt.Sprintf("contact@account%03d.example.com", i))
			b.Field(7).(*array.StringBuilder).Append(fmt.Sprintf("+1 555 %07d", 1000+i))
		}
	})
}

func opportunities(rng *rand.Rand, base time.Time) arrow.Table {
	return toTable(opportunitiesSchema(), func(b *array.RecordBuilder) {
		for i := 1; i <= Opportunities; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.Int64Builder).Append(int64(1 + rng.IntN(Accounts)))
			b.Field(2).(*array.StringBuilder).Append(stages[rng.IntN(len(stages))])
			d := base.AddDate(0, 0, rng.IntN(365))
			b.Field(3).(*array.Date32Builder).Append(arrow.Date32FromTime(d))
			b.Field(4).(*array.Float64Builder).Append(float64(1000+rng.IntN(250_000)) + 0.5)
		}
	})
}

func activities(rng *rand.Rand, base time.Time) arrow.Table {
	return toTable(activitiesSchema(), func(b *array.RecordBuilder) {
		for i := 1; i <= Activities; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.Int64Builder).Append(int64(1 + rng.IntN(Accounts)))
			b.Field(2).(*array.StringBuilder).Append(kinds[rng.IntN(len(kinds))])
			ts := base.Add(time.Duration(rng.IntN(90*24*3600)) * time.Second)
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("follow-up #%d", rng.IntN(100)))
		}
	})
}
