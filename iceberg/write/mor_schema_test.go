package write

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestShardReloadsNewerSchema: a shard whose cached table predates a schema
// change receives changes parsed with the new schema (by a worker that loaded
// the table since). It cannot re-encode them in its older schema without losing
// the new column: the bundle fails, naming the schema, and its retry loads the
// table afresh (not the cached metadata, which the table cache would keep for a
// minute) and applies them, the new column's value included.
func TestShardReloadsNewerSchema(t *testing.T) {
	ctx := context.Background()
	lc := icebergtest.NewLocalCatalog(t)
	sc := ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "city", Type: ibg.PrimitiveTypes.String},
	)
	tbl := icebergtest.CreateTable(t, lc.Catalog, "db.cdc", sc)
	spec := Spec{Table: "db.cdc", CatalogName: lc.Name, CatalogProps: lc.Props, SinkID: "s", MergeOnRead: true,
		ChangeTypeColumn: "op", SequenceNumberColumn: "seq", EqualityColumns: []string{"id"},
		ChangeTypeMap: map[string]string{"c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"},
		Upsert:        true, NumShards: 1, SorterMemoryMB: 1}
	f := &changeShardFn{Spec: spec}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	packet := func(sc *ibg.Schema, names []string, vals ...[]any) []byte {
		p, err := cdc.NewParser(spec.Table, sc, spec.changeSpec())
		if err != nil {
			t.Fatal(err)
		}
		pk := cdc.NewPacket(sc.ID)
		for _, v := range vals {
			c, err := p.Parse(row.New(names, v))
			if err != nil {
				t.Fatal(err)
			}
			kb, err := p.AppendKey(nil, c.Key)
			if err != nil {
				t.Fatal(err)
			}
			body, err := row.AppendBody(nil, c.Row)
			if err != nil {
				t.Fatal(err)
			}
			pk = cdc.AppendChange(pk, kb, c.Seq, c.Kind, body)
		}
		return pk
	}
	var rows [][]byte
	run := func(win int64, pk []byte) error {
		rows = nil
		f.StartBundle(ctx, nil, nil)
		w := window.IntervalWindow{Start: mtime.FromMilliseconds(win - 1000), End: mtime.FromMilliseconds(win)}
		once := false
		err := f.ProcessElement(ctx, w, 0, func(p *[]byte) bool {
			if once {
				return false
			}
			*p, once = pk, true
			return true
		}, func(_ string, o shardOut) {
			if o.Rows != nil {
				rows = append(rows, o.Rows)
			}
		}, func(d DeadLetter) { t.Errorf("dead letter: %v", d) })
		if err == nil {
			err = f.FinishBundle(ctx, nil, nil)
		}
		return err
	}

	// The shard caches the table at schema 0.
	if err := run(1000, packet(sc, []string{"op", "id", "city", "seq"}, []any{"c", int64(1), "a", int64(1)})); err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"zip"}, ibg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newer := packet(tbl.Schema(), []string{"op", "id", "city", "zip", "seq"}, []any{"c", int64(2), "b", "94110", int64(2)})
	err = run(2000, newer)
	if !errors.Is(err, cdc.ErrUnknownSchema) {
		t.Fatalf("a packet of schema %d against the cached schema 0: err = %v", tbl.Schema().ID, err)
	}
	if err := run(2000, newer); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if len(rows) != 1 {
		t.Fatalf("the retry wrote %d row packets, want 1", len(rows))
	}
	got, err := decodeRowPacket(tbl, rows[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{id: 2, city: "b", zip: "94110", _row_id: null}]`; got != want {
		t.Fatalf("rows written %s, want %s", got, want)
	}
}

// decodeRowPacket returns the rows of a shard's packet of new rows (see
// packetHeader), as strings; rows of a lineage packet end with _row_id.
func decodeRowPacket(tbl *table.Table, p []byte) (string, error) {
	id, lineage, n := readPacketHeader(p)
	sc, ok := tbl.Schemas()[id]
	if !ok {
		return "", fmt.Errorf("packet of schema %d", id)
	}
	if lineage {
		sc = datafile.LineageSchema(sc)
	}
	rs := row.SchemaOf(sc)
	var out []string
	for b := p[n:]; len(b) > 0; {
		r, m, err := row.DecodeBody(rs, b)
		if err != nil {
			return "", err
		}
		out, b = append(out, r.String()), b[m:]
	}
	return fmt.Sprint(out), nil
}
