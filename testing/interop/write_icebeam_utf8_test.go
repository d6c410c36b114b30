//go:build interop

package interop

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// The UTF-8 scenarios: rows whose category is not valid UTF-8 go to Write's dead
// letter output naming the column, the other rows are written, and every engine must
// read exactly the valid rows (issue 14).

// utf8Rows is how many rows the UTF-8 scenarios append.
const utf8Rows = 10000

// badUTF8 says whether the row or change of id carries a category that is not valid
// UTF-8: ids ending in 507 (507 is a standard lookup).
func badUTF8(id int64) bool { return id%1000 == 507 }

// notUTF8 returns one of several strings no UTF-8 decoder accepts, by id: a byte
// 0xff, a truncated sequence, an encoded surrogate, an overlong encoding.
func notUTF8(id int64) string {
	return [...]string{"bad\xff", "c3\xc3", "c\xed\xa0\x80", "\xc0\xafc1"}[(id/1000)%4]
}

func init() {
	register.Function2x0(genUTF8RowsFn)
	register.Function2x0(genUTF8ChangeFn)
	register.Function1x1(deadLetterKey)
}

// genUTF8RowsFn emits the rows of genRowsFn, with a category that is not valid UTF-8
// for the ids badUTF8 picks.
func genUTF8RowsFn(r idRange, emit func(icebeamRow)) {
	genRowsFn(r, func(row icebeamRow) {
		if badUTF8(row.ID) {
			s := notUTF8(row.ID)
			row.Category = &s
		}
		emit(row)
	})
}

// genUTF8ChangeFn emits the change of genChangeFn, with a category that is not valid
// UTF-8 for the ids badUTF8 picks.
func genUTF8ChangeFn(c changeSpec, emit func(icebeamChange)) {
	genChangeFn(c, func(ch icebeamChange) {
		if badUTF8(ch.ID) {
			s := notUTF8(ch.ID)
			ch.Category = &s
		}
		emit(ch)
	})
}

// deadIDRe finds the id in a dead letter's row (the struct's %+v form).
var deadIDRe = regexp.MustCompile(`\bID:(\d+)\b`)

// deadLetterKey returns "<table> id=<id>" for a dead letter whose reason says the
// category column is not valid UTF-8, and the whole letter otherwise (so that a
// wrong letter shows in passert's diff).
func deadLetterKey(d iceberg.DeadLetter) string {
	m := deadIDRe.FindStringSubmatch(d.Row)
	if m == nil || !strings.Contains(d.Reason, `column "category"`) || !strings.Contains(d.Reason, "not valid UTF-8") {
		return fmt.Sprintf("unexpected dead letter %+v", d)
	}
	return d.Table + " id=" + m[1]
}

// wantDeadKeys returns the deadLetterKey of each bad id in ids.
func wantDeadKeys(ident string, ids []int64) []any {
	var out []any
	for _, id := range ids {
		if badUTF8(id) {
			out = append(out, ident+" id="+fmt.Sprint(id))
		}
	}
	return out
}

// utf8Lookups adds to sc lookups of dead-lettered ids (absent, or their old row
// after a rejected change) and the query of ids alone: exactly the valid rows.
func utf8Lookups(t *testing.T, sc Scenario, live map[int64][]any, ids ...int64) Scenario {
	t.Helper()
	for _, id := range ids {
		lk := Lookup{ID: id}
		if v, ok := live[id]; ok {
			s, err := CanonicalValues(v, ColumnNames())
			if err != nil {
				t.Fatal(err)
			}
			lk.Row = &s
		}
		sc.Lookups = append(sc.Lookups, lk)
	}
	var sum Checksum
	for id := range live {
		sum.Add(fmt.Sprint(id))
	}
	sc.Queries = append(sc.Queries, Query{Name: "ids", Keep: []string{"id"}, Count: sum.N, Checksum: sum.String()})
	return sc
}

// writeUTF8Append appends utf8Rows rows with iceberg.Write to a new v3 table,
// asserts the dead letters (one per bad row, naming the column) and returns the
// scenario of the valid rows.
func writeUTF8Append(t *testing.T, cat *icebergtest.LocalCatalog) Scenario {
	const ident = "go_icebeam.v3_append_utf8"
	icebergtest.CreateTable(t, cat.Catalog, ident, Schema(), icebergtest.WithFormatVersion(3))
	live := map[int64][]any{}
	var all []int64
	for id := int64(0); id < utf8Rows; id++ {
		all = append(all, id)
		if !badUTF8(id) {
			live[id] = GenRow(id)
		}
	}
	writeUTF8(t, ident, cat, iceberg.WriteConfig{}, func(s beam.Scope) beam.PCollection {
		var ranges []idRange
		for lo := int64(0); lo < utf8Rows; lo += 2500 {
			ranges = append(ranges, idRange{lo, lo + 2500})
		}
		return beam.ParDo(s, genUTF8RowsFn, beam.CreateList(s, ranges))
	}, wantDeadKeys(ident, all))
	sc := scenarioFor(t, "v3 append, invalid UTF-8 rows dead-lettered", ident, 3, live)
	return utf8Lookups(t, sc, live, 1507, 9507)
}

// writeUTF8MOR appends utf8Rows valid rows to a new v3 table, then applies with
// iceberg.Write in mode merge-on-read a CDC batch (deletes of ids ending in 3,
// upserts of ids ending in 7, inserts of utf8Rows..utf8Rows+999) in which the changes
// of the bad ids carry invalid UTF-8: they go to the dead letters (the rows they
// update keep their values) and the rest apply.
func writeUTF8MOR(t *testing.T, cat *icebergtest.LocalCatalog) Scenario {
	const ident = "go_icebeam.v3_mor_utf8"
	icebergtest.CreateTable(t, cat.Catalog, ident, Schema(), icebergtest.WithFormatVersion(3))
	live := map[int64][]any{}
	for id := int64(0); id < utf8Rows; id++ {
		live[id] = GenRow(id)
	}
	writeUTF8(t, ident, cat, iceberg.WriteConfig{}, func(s beam.Scope) beam.PCollection {
		return beam.ParDo(s, genRowsFn, beam.CreateList(s, []idRange{{0, utf8Rows / 2}, {utf8Rows / 2, utf8Rows}}))
	}, nil)
	var changes []changeSpec
	var ids []int64
	add := func(op string, id, valuesOf int64) {
		changes = append(changes, changeSpec{Op: op, ID: id, ValuesOf: valuesOf, Seq: int64(len(changes) + 1)})
		ids = append(ids, id)
	}
	for id := int64(0); id < utf8Rows; id++ {
		switch id % 10 {
		case 3:
			add("d", id, id)
		case 7:
			add("u", id, id+500000)
		}
	}
	for id := int64(utf8Rows); id < utf8Rows+1000; id++ {
		add("c", id, id)
	}
	writeUTF8(t, ident, cat, iceberg.WriteConfig{Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", Upsert: true,
		ChangeTypeMap: map[string]string{"c": iceberg.ChangeInsert, "u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete},
	}, func(s beam.Scope) beam.PCollection {
		return beam.ParDo(s, genUTF8ChangeFn, beam.CreateList(s, changes))
	}, wantDeadKeys(ident, ids))
	for _, c := range changes {
		switch {
		case badUTF8(c.ID):
		case c.Op == "d":
			delete(live, c.ID)
		default:
			live[c.ID] = morValues(c)
		}
	}
	sc := scenarioFor(t, "v3 merge-on-read CDC, invalid UTF-8 changes dead-lettered", ident, 3, live, "PUFFIN/position")
	return utf8Lookups(t, sc, live, 1507, utf8Rows+507)
}

// writeUTF8 runs one iceberg.Write of the rows build makes to ident with cfg (its
// table and catalog filled in) and asserts one snapshot and exactly the dead letters
// want (deadLetterKey values).
func writeUTF8(t *testing.T, ident string, cat *icebergtest.LocalCatalog, cfg iceberg.WriteConfig, build func(beam.Scope) beam.PCollection, want []any) {
	t.Helper()
	cfg.Table, cfg.CatalogName, cfg.CatalogProperties = ident, cat.Name, cat.Props
	p, s := beam.NewPipelineWithRoot()
	res, err := iceberg.TryWrite(s, cfg, build(s))
	if err != nil {
		t.Fatalf("TryWrite %s: %v", ident, err)
	}
	passert.Equals(s, beam.ParDo(s, deadLetterKey, res.DeadLetter), want...)
	passert.Count(s, res.Snapshots, "snapshots", 1)
	if err := ptest.Run(p); err != nil {
		t.Fatalf("write %s: %v", ident, err)
	}
	tbl, err := cat.Catalog.LoadTable(t.Context(), strings.Split(ident, "."))
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
}
