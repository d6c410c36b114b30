//go:build interop

package interop

import (
	"fmt"
	"reflect"
	"slices"
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

// The evolved scenario (issue 15): a table of Columns written by iceberg.Write, then
// written again by rows whose qty is a long and that carry a new column note, with
// evolve_schema: the table's qty widens from int to long and note is added. Every
// engine reads the files of both schemas.

// evolvedRows are the ids of the scenario: [0, evolvedFrom) written with the old
// schema, [evolvedFrom, evolvedRows) with the new one.
const (
	evolvedFrom = 20000
	evolvedRows = 30000
)

// evolvedRow is icebeamRow with qty a long and the new column note.
type evolvedRow struct {
	ID       int64        `iceberg:"id"`
	Category *string      `iceberg:"category"`
	Qty      *int64       `iceberg:"qty"`
	Amount   *ibg.Decimal `iceberg:"amount" precision:"10" scale:"2"`
	Score    *float64     `iceberg:"score"`
	Day      *ibg.Date    `iceberg:"day"`
	TS       *time.Time   `iceberg:"ts"`
	Flag     *bool        `iceberg:"flag"`
	Note     *string      `iceberg:"note"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[evolvedRow]())
	register.Function2x0(genEvolvedRowsFn)
	register.Emitter1[evolvedRow]()
}

// evolvedNote is the note of row id: null for every fourth id.
func evolvedNote(id int64) any {
	if id%4 == 0 {
		return nil
	}
	return fmt.Sprintf("n%d", id%5)
}

// genEvolvedRowsFn emits the rows of genRowsFn as evolvedRows (qty's values as
// longs, which the table's int column does not take) with evolvedNote.
func genEvolvedRowsFn(r idRange, emit func(evolvedRow)) {
	genRowsFn(r, func(row icebeamRow) {
		q := int64(*row.Qty)
		out := evolvedRow{ID: row.ID, Category: row.Category, Qty: &q, Amount: row.Amount, Score: row.Score,
			Day: row.Day, TS: row.TS, Flag: row.Flag}
		if n := evolvedNote(row.ID); n != nil {
			s := n.(string)
			out.Note = &s
		}
		emit(out)
	})
}

// writeEvolved writes the evolved scenario to go_icebeam.v3_evolved and returns it.
func writeEvolved(t *testing.T, cat *icebergtest.LocalCatalog) Scenario {
	const ident = "go_icebeam.v3_evolved"
	icebergtest.CreateTable(t, cat.Catalog, ident, Schema(), icebergtest.WithFormatVersion(3))
	ranges := func(lo, hi int64) []idRange {
		var out []idRange
		for ; lo < hi; lo += 2500 {
			out = append(out, idRange{lo, min(lo+2500, hi)})
		}
		return out
	}
	for _, w := range []struct {
		gen    any
		lo, hi int64
	}{{genRowsFn, 0, evolvedFrom}, {genEvolvedRowsFn, evolvedFrom, evolvedRows}} {
		p, s := beam.NewPipelineWithRoot()
		rows := beam.ParDo(s, w.gen, beam.Reshuffle(s, beam.CreateList(s, ranges(w.lo, w.hi))))
		res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: ident, CatalogName: cat.Name,
			CatalogProperties: cat.Props, EvolveSchema: true}, rows)
		if err != nil {
			t.Fatalf("TryWrite %s: %v", ident, err)
		}
		passert.Count(s, res.DeadLetter, "dead letters", 0)
		passert.Count(s, res.Snapshots, "snapshots", 1)
		if err := ptest.Run(p); err != nil {
			t.Fatalf("write %s: %v", ident, err)
		}
	}
	tbl, err := cat.Catalog.LoadTable(t.Context(), []string{"go_icebeam", "v3_evolved"})
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	sc := tbl.Schema()
	if q, _ := sc.FindFieldByName("qty"); !q.Type.Equals(ibg.PrimitiveTypes.Int64) || len(tbl.Metadata().Schemas()) != 2 {
		t.Fatalf("evolved schema %s (%d schemas), want qty long and one update", sc, len(tbl.Metadata().Schemas()))
	}
	if n, ok := sc.FindFieldByName("note"); !ok || n.Required || n.ID != 9 {
		t.Fatalf("evolved schema %s: want an optional note with id 9", sc)
	}

	// The answers: the standard queries keep base columns, whose values are GenRow's;
	// the full rows and the lookups have note too.
	live := map[int64][]any{}
	for id := int64(0); id < evolvedRows; id++ {
		live[id] = GenRow(id)
	}
	scn := scenarioFor(t, "v3 append, schema evolved by evolve_schema (qty int to long, new column note)", ident, 3, live)
	scn.Columns = append(slices.Clone(Columns), Column{"note", "string"})
	scn.Columns[2].Type = "long"
	rowOf := func(id int64) string {
		base, err := CanonicalValues(live[id], ColumnNames())
		if err != nil {
			t.Fatal(err)
		}
		note, err := Canonical(evolvedNoteOf(id))
		if err != nil {
			t.Fatal(err)
		}
		return CanonicalRow([]string{base, note})
	}
	var sum Checksum
	for id := range live {
		sum.Add(rowOf(id))
	}
	scn.Count, scn.Checksum = sum.N, sum.String()
	for i, lk := range scn.Lookups {
		if lk.Row != nil {
			r := rowOf(lk.ID)
			scn.Lookups[i].Row = &r
		}
	}
	return scn
}

// evolvedNoteOf is the note column of row id: null for the rows of the old schema.
func evolvedNoteOf(id int64) any {
	if id < evolvedFrom {
		return nil
	}
	return evolvedNote(id)
}
