package iceberg

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// bigQueryReadmeSection is where the README says what BigQuery reads of an Iceberg
// table.
const bigQueryReadmeSection = "https://github.com/icebeam/icebeam#reading-icebeam-tables-in-bigquery"

// isBigLake reports whether props name BigLake's Iceberg REST catalog, whose tables
// BigQuery reads.
func isBigLake(props map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(props["type"]), "rest") &&
		strings.Contains(strings.ToLower(props["uri"]), "biglake.googleapis.com")
}

// bigQueryUnreadable returns, for each column of sc (nested ones by their dotted
// path) that BigQuery cannot read, why: variant, geometry and geography,
// nanosecond timestamps, unknown, and columns with a default value (Google's
// documentation of BigQuery's Iceberg tables lists them as unsupported).
func bigQueryUnreadable(sc *ibg.Schema) []string {
	var out []string
	var visit func(prefix string, f ibg.NestedField)
	visit = func(prefix string, f ibg.NestedField) {
		name := prefix + f.Name
		switch t := f.Type.(type) {
		case ibg.VariantType, ibg.UnknownType, ibg.GeometryType, ibg.GeographyType,
			ibg.TimestampNsType, ibg.TimestampTzNsType:
			out = append(out, fmt.Sprintf("column %q is %s", name, t))
		case *ibg.StructType:
			for _, c := range t.FieldList {
				visit(name+".", c)
			}
		case *ibg.ListType:
			visit(name+".", t.ElementField())
		case *ibg.MapType:
			visit(name+".", t.KeyField())
			visit(name+".", t.ValueField())
		}
		if f.InitialDefault != nil || f.WriteDefault != nil {
			out = append(out, fmt.Sprintf("column %q has a default value", name))
		}
	}
	for _, f := range sc.Fields() {
		visit("", f)
	}
	return out
}

// warnBigQueryTypes logs one warning, at construction, when cfg writes to a BigLake
// catalog rows of a struct type with columns BigQuery cannot read (Row collections
// have no schema before run time).
func warnBigQueryTypes(cfg WriteConfig, rows reflect.Type) {
	if !isBigLake(cfg.CatalogProperties) || rows == reflect.TypeFor[row.Row]() {
		return
	}
	if rows.Kind() == reflect.Pointer {
		rows = rows.Elem()
	}
	sc, err := row.InferStructSchema(rows)
	if err != nil {
		return // TryWrite reports it
	}
	if cols := bigQueryUnreadable(sc); len(cols) > 0 {
		log.Warnf(context.Background(), "iceberg: write %s: the table is in a BigLake catalog, but BigQuery cannot read %s (other engines can); see %s",
			cfg.Table, strings.Join(cols, ", "), bigQueryReadmeSection)
	}
}
