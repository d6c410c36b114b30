//go:build interop

package interop

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// icebeamRow is the struct form of Columns that the icebeam writer writes.
type icebeamRow struct {
	ID       int64        `iceberg:"id"`
	Category *string      `iceberg:"category"`
	Qty      *int32       `iceberg:"qty"`
	Amount   *ibg.Decimal `iceberg:"amount" precision:"10" scale:"2"`
	Score    *float64     `iceberg:"score"`
	Day      *ibg.Date    `iceberg:"day"`
	TS       *time.Time   `iceberg:"ts"`
	Flag     *bool        `iceberg:"flag"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[icebeamRow]())
	beam.RegisterType(reflect.TypeFor[idRange]())
	register.Function2x0(genRowsFn)
	register.Emitter1[icebeamRow]()
}

// idRange is the ids [Lo, Hi).
type idRange struct{ Lo, Hi int64 }

// genRowsFn emits GenRow(id) as an icebeamRow for each id in r.
func genRowsFn(r idRange, emit func(icebeamRow)) {
	for id := r.Lo; id < r.Hi; id++ {
		v := GenRow(id)
		row := icebeamRow{ID: id}
		if v[1] != nil {
			s := v[1].(string)
			row.Category = &s
		}
		q := v[2].(int32)
		row.Qty = &q
		d := v[3].(ibg.Decimal)
		row.Amount = &d
		if v[4] != nil {
			f := v[4].(float64)
			row.Score = &f
		}
		day := v[5].(ibg.Date)
		row.Day = &day
		ts := time.UnixMicro(int64(v[6].(ibg.Timestamp))).UTC()
		row.TS = &ts
		b := v[7].(bool)
		row.Flag = &b
		emit(row)
	}
}

// writeIcebeam writes the "icebeam" scenarios with icebeam's own
// iceberg.Write on prism into the shared catalog, and their expected
// answers to expected/icebeam.json: v3 and v2 appends, and an append whose rows
// with invalid UTF-8 go to the dead letters (writeUTF8Append), and a table whose
// schema the write evolves (writeEvolved). Its merge-on-read
// scenarios are writeIcebeamMOR's.
func writeIcebeam(t *testing.T) {
	cat, err := icebergtest.NewLocalCatalogAt(catalogDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	exp := Expected{Writer: "icebeam"}
	for _, v := range []struct {
		ident, name string
		version     int
	}{
		{"go_icebeam.v3_append", "v3 appends (2 commits)", 3},
		{"go_icebeam.v2_append", "v2 appends (2 commits)", 2},
	} {
		icebergtest.CreateTable(t, cat.Catalog, v.ident, Schema(), icebergtest.WithFormatVersion(v.version))
		live := map[int64][]any{}
		for _, r := range [][2]int64{{0, 30000}, {30000, 45000}} {
			p, s := beam.NewPipelineWithRoot()
			var ranges []idRange
			for lo := r[0]; lo < r[1]; lo += 5000 {
				ranges = append(ranges, idRange{lo, min(lo+5000, r[1])})
			}
			rows := beam.ParDo(s, genRowsFn, beam.CreateList(s, ranges))
			res, err := iceberg.TryWrite(s, iceberg.WriteConfig{
				Table: v.ident, CatalogName: cat.Name, CatalogProperties: cat.Props,
			}, rows)
			if err != nil {
				t.Fatalf("TryWrite %s: %v", v.ident, err)
			}
			passert.Count(s, res.DeadLetter, "dead letters", 0)
			passert.Count(s, res.Snapshots, "snapshots", 1)
			if err := ptest.Run(p); err != nil {
				t.Fatalf("write %s: %v", v.ident, err)
			}
			for id := r[0]; id < r[1]; id++ {
				live[id] = GenRow(id)
			}
		}
		tbl, err := cat.Catalog.LoadTable(t.Context(), []string{"go_icebeam", v.ident[len("go_icebeam."):]})
		if err != nil {
			t.Fatal(err)
		}
		icebergtest.RequireValid(t, tbl)
		exp.Scenarios = append(exp.Scenarios, scenarioFor(t, v.name, v.ident, v.version, live))
	}
	exp.Scenarios = append(exp.Scenarios, writeUTF8Append(t, cat), writeEvolved(t, cat))
	exp.Scenarios = append(exp.Scenarios, writeIcebeamTypes(t, cat)...)
	if err := WriteJSON(filepath.Join(expectedDir(t), "icebeam.json"), exp); err != nil {
		t.Fatal(err)
	}
}
