package iceberg

import (
	"slices"
	"testing"

	ibg "github.com/apache/iceberg-go"
)

// TestBigQueryUnreadable: the columns BigQuery cannot read are named by their paths,
// nested ones included, and only for a BigLake REST catalog.
func TestBigQueryUnreadable(t *testing.T) {
	inner := &ibg.StructType{FieldList: []ibg.NestedField{
		{ID: 10, Name: "at", Type: ibg.PrimitiveTypes.TimestampTzNs},
		{ID: 11, Name: "ok", Type: ibg.PrimitiveTypes.Int64}}}
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "doc", Type: ibg.VariantType{}},
		ibg.NestedField{ID: 3, Name: "s", Type: inner},
		ibg.NestedField{ID: 4, Name: "ts", Type: ibg.PrimitiveTypes.TimestampNs},
		ibg.NestedField{ID: 5, Name: "n", Type: ibg.PrimitiveTypes.Int32, WriteDefault: int32(7)},
		ibg.NestedField{ID: 6, Name: "u", Type: ibg.UnknownType{}},
		ibg.NestedField{ID: 7, Name: "l", Type: &ibg.ListType{ElementID: 8, Element: ibg.VariantType{}}})
	got := bigQueryUnreadable(sc)
	want := []string{`column "doc" is variant`, `column "s.at" is timestamptz_ns`, `column "ts" is timestamp_ns`,
		`column "n" has a default value`, `column "u" is unknown`, `column "l.element" is variant`}
	if !slices.Equal(got, want) {
		t.Fatalf("bigQueryUnreadable = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		props map[string]string
		want  bool
	}{
		{map[string]string{"type": "rest", "uri": "https://biglake.googleapis.com/iceberg/v1/restcatalog"}, true},
		{map[string]string{"type": "REST", "uri": "https://BIGLAKE.googleapis.com/x"}, true},
		{map[string]string{"type": "rest", "uri": "https://example.com/catalog"}, false},
		{map[string]string{"type": "sql", "uri": "file:biglake.googleapis.com.db"}, false},
	} {
		if isBigLake(tc.props) != tc.want {
			t.Errorf("isBigLake(%v) = %v, want %v", tc.props, !tc.want, tc.want)
		}
	}
}
