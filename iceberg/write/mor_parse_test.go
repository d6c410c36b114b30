package write

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestParsePlanKeys: the parse step plans how the shards resolve a deletion vector
// table's keys: a streaming write warms the worker's key index, a batch one expects
// the keys it parses; an equality delete write needs neither.
func TestParsePlanKeys(t *testing.T) {
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "plankeys", writetest.IDNameSchema())
	for _, tc := range []struct {
		name             string
		windowed         bool
		format           string
		warm, wantExpect bool
	}{
		{"streaming dv", true, "", true, false},
		{"batch dv", false, "", false, true},
		{"streaming equality", true, "equality", false, false},
		{"batch equality", false, "equality", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &changeParseFn{Spec: Spec{Table: "db.plankeys", Windowed: tc.windowed, DeleteFormat: tc.format,
				EqualityColumns: []string{"id"}, NumShards: 2, KeyIndexMemoryMB: 1}}
			if err := f.planKeys(tbl); err != nil {
				t.Fatal(err)
			}
			if f.warm != tc.warm || (f.expect != nil) != tc.wantExpect {
				t.Errorf("warm = %v, expect = %v; want %v, %v", f.warm, f.expect != nil, tc.warm, tc.wantExpect)
			}
		})
	}
}

// parseFnOn returns a parse DoFn of a merge-on-read write to db.<name> of lc,
// set up (runtime and envelope): change rows (op, id, name, seq) keyed by id.
func parseFnOn(t *testing.T, lc *icebergtest.LocalCatalog, name string, windowed bool) *changeParseFn {
	t.Helper()
	f := &changeParseFn{Spec: Spec{Table: "db." + name, CatalogName: lc.Name, CatalogProps: lc.Props,
		SinkID: "s", RunID: "run-1", MergeOnRead: true, Windowed: windowed, LatenessMs: 5000,
		ChangeTypeColumn: "op", SequenceNumberColumn: "seq", EqualityColumns: []string{"id"},
		ChangeTypeMap: map[string]string{"c": "INSERT", "d": "DELETE"}, NumShards: 4, SorterMemoryMB: 1}}
	if err := f.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

// changeRow is a change row of parseFnOn's write.
func changeRow(id int64, name any) row.Row {
	return row.New([]string{"op", "id", "name", "seq"}, []any{"c", id, name, id})
}

// TestParseOpenTable: the parse step loads an existing table; a missing one it
// creates from the row (its row image, without the control columns, the key
// required); a row whose schema cannot be inferred (a null) is a reject naming
// the table, and creates nothing.
func TestParseOpenTable(t *testing.T) {
	ctx := context.Background()
	lc := writetest.NewLocalCatalog(t)
	writetest.CreateTable(t, lc.Catalog, "existing", writetest.IDNameSchema())

	tbl, reject, err := parseFnOn(t, lc, "existing", false).openTable(ctx, changeRow(1, "a"))
	if err != nil || reject != nil {
		t.Fatalf("existing table: reject %v, err %v", reject, err)
	}
	if got := strings.Join(tbl.Identifier(), "."); got != "db.existing" {
		t.Fatalf("existing table: opened %s", got)
	}

	_, reject, err = parseFnOn(t, lc, "nulls", false).openTable(ctx, changeRow(1, nil))
	if err != nil || reject == nil || !strings.Contains(reject.Error(), "cannot create table db.nulls") {
		t.Fatalf("a row with a null: reject %v, err %v; want a reject naming db.nulls", reject, err)
	}
	if _, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "nulls"}); err == nil {
		t.Fatal("a row with a null created the table")
	}

	tbl, reject, err = parseFnOn(t, lc, "created", false).openTable(ctx, changeRow(1, "a"))
	if err != nil || reject != nil {
		t.Fatalf("missing table: reject %v, err %v", reject, err)
	}
	loaded, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "created"})
	if err != nil {
		t.Fatalf("missing table not created: %v", err)
	}
	sc := loaded.Schema()
	if cols := writetest.ColumnNames(loaded); cols != "id,name" {
		t.Errorf("created table's columns %s, want id,name", cols)
	}
	if id, ok := sc.FindFieldByName("id"); !ok || !id.Required || !slices.Equal(sc.IdentifierFieldIDs, []int{id.ID}) {
		t.Errorf("created table's key: id %+v, identifier fields %v; want id required and the identifier", id, sc.IdentifierFieldIDs)
	}
	if tbl.Schema().ID != sc.ID {
		t.Errorf("openTable returned schema %d, the table has %d", tbl.Schema().ID, sc.ID)
	}
}

// TestParseSchema: the parse step's parser and sharder are those of the table it
// is given: a column only a newer schema has parses with that schema's parser and
// not with an older one's; keys spread over the write's shards; equality columns
// the table lacks are an error naming the table.
func TestParseSchema(t *testing.T) {
	lc := writetest.NewLocalCatalog(t)
	narrow := writetest.CreateTable(t, lc.Catalog, "narrow", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true}))
	wide := writetest.CreateTable(t, lc.Catalog, "wide", writetest.IDNameSchema())
	f := parseFnOn(t, lc, "wide", false)

	parser, _, err := f.parseSchema(narrow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(changeRow(1, "a")); err == nil {
		t.Error("the parser of a table without column name took a row with name")
	}
	parser, sharder, err := f.parseSchema(wide)
	if err != nil {
		t.Fatal(err)
	}
	shards := map[int]bool{}
	for id := range int64(100) {
		c, err := parser.Parse(changeRow(id, "a"))
		if err != nil {
			t.Fatalf("the parser of the table with column name: %v", err)
		}
		if got := c.Row.Len(); got != 2 {
			t.Fatalf("parsed row has %d columns, want 2 (id, name)", got)
		}
		kb, err := parser.AppendKey(nil, c.Key)
		if err != nil {
			t.Fatal(err)
		}
		s := sharder.Shard(kb, c.Key)
		if s < 0 || s >= f.Spec.NumShards {
			t.Fatalf("key %d: shard %d of %d", id, s, f.Spec.NumShards)
		}
		shards[s] = true
	}
	if len(shards) != f.Spec.NumShards {
		t.Errorf("100 keys went to %d of %d shards", len(shards), f.Spec.NumShards)
	}

	f.Spec.EqualityColumns = []string{"missing"}
	f.rt.changes.EqualityColumns = f.Spec.EqualityColumns
	if _, _, err := f.parseSchema(wide); err == nil || !strings.Contains(err.Error(), "db.wide") || !strings.Contains(err.Error(), "missing") {
		t.Errorf("equality column the table lacks: %v; want an error naming db.wide and the column", err)
	}
}

// TestParseTooLate: a windowed write's parse step sends a row whose window closed
// more than allowed_lateness_seconds before the sink's newest committed window to
// the dead letter output, with the reason; rows within the lateness, of open
// windows or of a write without windows pass.
func TestParseTooLate(t *testing.T) {
	ctx := context.Background()
	lc := writetest.NewLocalCatalog(t)
	tbl := writetest.CreateTable(t, lc.Catalog, "late", writetest.IDNameSchema())
	if _, err := writetest.FastCommitter.Commit(ctx, lc.Catalog, tbl.Identifier(), commit.CommitRequest{SinkID: "s", RunID: "run-1",
		WindowEndMs: 30_000, DataFiles: writetest.WriteIDFiles(t, tbl, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	tbl, err := lc.Catalog.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	// win is the window whose token value (max timestamp) is end.
	win := func(end int64) beam.Window {
		return window.IntervalWindow{Start: mtime.FromMilliseconds(end - 9_999), End: mtime.FromMilliseconds(end + 1)}
	}
	for _, tc := range []struct {
		name     string
		windowed bool
		end      int64
		late     bool
	}{
		{"too late", true, 10_000, true},
		{"within the lateness", true, 26_000, false},
		{"committed window", true, 30_000, false},
		{"open window", true, 40_000, false},
		{"no windows", false, 10_000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := parseFnOn(t, lc, "late", tc.windowed)
			f.tbl = tbl
			reason, err := f.tooLate(ctx, win(tc.end))
			if err != nil {
				t.Fatal(err)
			}
			if got := reason != ""; got != tc.late {
				t.Fatalf("window ending %d: reason %q, want late %v", tc.end, reason, tc.late)
			}
			if tc.late && !strings.Contains(reason, "allowed_lateness_seconds=5") {
				t.Errorf("reason %q does not name allowed_lateness_seconds", reason)
			}
		})
	}
}
