package read

import (
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/jsonx"
)

// TestDoFnSpecsSurviveSerialization round-trips each read DoFn through the JSON
// encoding the SDK applies to a structural DoFn's exported fields
// (graphx.encodeFn/decodeFn use jsonx), and checks that the typed spec a worker gets
// is the one built at construction.
func TestDoFnSpecsSurviveSerialization(t *testing.T) {
	until := int64(1_700_000_000_123)
	spec := Spec{
		CatalogName:  "lake",
		CatalogProps: [][2]string{{"type", "sql"}, {"uri", "file:///tmp/x.db"}},
		Table:        "db.events",
		SnapshotID:   42,
		AsOfMs:       1_700_000_000_000,
		Branch:       "audit",
		Filter:       "ts > TIMESTAMP '2026-01-02 03:04:05' AND name LIKE 'a%'",
		Columns:      []string{"id", "payload.name"},
	}
	stream := Stream{PollSeconds: 3, BaseSnapshotID: 7, BaseSequence: 5, UntilMs: &until, SinceMs: 9}
	changes := ChangesSpec{Spec: spec, FromSnapshotID: 3, ToSnapshotID: 7, KeyColumns: []string{"id"},
		ReadColumns: []string{"id", "payload.name"}, Stream: &stream}
	appends := AppendsSpec{Spec: spec, Stream: stream, BaseScan: true, FromSnapshotID: 2}

	for _, fn := range []any{
		&planFn{Spec: spec},
		&readFn{Spec: spec},
		&readRecordsFn{Spec: spec},
		&changesPlanFn{Spec: changes},
		&changesReadFn{Spec: changes},
		&watchChangesFn{Spec: changes},
		&watchAppendsFn{Spec: appends},
	} {
		t.Run(reflect.TypeOf(fn).Elem().Name(), func(t *testing.T) {
			data, err := jsonx.Marshal(fn)
			if err != nil {
				t.Fatal(err)
			}
			got := reflect.New(reflect.TypeOf(fn).Elem())
			if err := jsonx.Unmarshal(got.Interface(), data); err != nil {
				t.Fatal(err)
			}
			want := reflect.ValueOf(fn).Elem().FieldByName("Spec").Interface()
			if g := got.Elem().FieldByName("Spec").Interface(); !reflect.DeepEqual(g, want) {
				t.Fatalf("after serialization:\n%+v\nwant\n%+v", g, want)
			}
		})
	}
}
