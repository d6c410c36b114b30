package iceberg_test

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// The late-row scenario of issue 16: a periodic source ticks every lateTickMs; each
// tick emits lateTickRows on-time rows (ids tick*1000+j) and, from tick lateFrom on,
// every tenth tick one row lateShortMs late (id tick*1000+900) and one lateLongMs
// late (id tick*1000+950), with allowed_lateness_seconds lateAllowedS and 1 s
// windows.
const (
	lateTickMs   = 100
	lateTickRows = 200
	lateFrom     = 20
	lateShortMs  = 3000
	lateLongMs   = 15000
	lateAllowedS = 5
)

// LateChange is a row of the scenario: inserts only, the sequence number is the id
// (a late row keeps the sequence of its event time, as a CDC source's would).
type LateChange struct {
	ID  int64  `iceberg:"id"`
	V   string `iceberg:"v"`
	Op  string `iceberg:"op"`
	Seq int64  `iceberg:"_commit_snapshot_sequence_number"`
}

// lateTickFn emits the rows of a tick of the scenario.
type lateTickFn struct {
	StartMs     int64
	Short, Long bool
}

func (f *lateTickFn) ProcessElement(ts beam.EventTime, _ []byte, emit func(beam.EventTime, LateChange)) {
	tick := (ts.Milliseconds() - f.StartMs) / lateTickMs
	at := f.StartMs + tick*lateTickMs
	for j := range int64(lateTickRows) {
		id := tick*1000 + j
		emit(mtime.FromMilliseconds(at+j*lateTickMs/lateTickRows), lateRow(id))
	}
	if tick < lateFrom || tick%10 != 0 {
		return
	}
	if f.Short {
		emit(mtime.FromMilliseconds(at-lateShortMs), lateRow(tick*1000+900))
	}
	if f.Long {
		emit(mtime.FromMilliseconds(at-lateLongMs), lateRow(tick*1000+950))
	}
}

func lateRow(id int64) LateChange {
	return LateChange{ID: id, V: "v" + strconv.FormatInt(id, 10), Op: "c", Seq: id}
}

func init() {
	beam.RegisterType(reflect.TypeFor[LateChange]())
	register.DoFn3x0[beam.EventTime, []byte, func(beam.EventTime, LateChange)](&lateTickFn{})
	register.Emitter2[beam.EventTime, LateChange]()
}

var idPattern = regexp.MustCompile(`id(?:=|: )(\d+)`)

// deadIDs returns the id of each dead letter's row.
func deadIDs(t *testing.T, dead []iceberg.DeadLetter) []int64 {
	t.Helper()
	var out []int64
	for _, d := range dead {
		m := idPattern.FindStringSubmatch(d.Row)
		if m == nil {
			t.Fatalf("dead letter without an id: %+v", d)
		}
		id, _ := strconv.ParseInt(m[1], 10, 64)
		out = append(out, id)
	}
	return out
}

// tableIDCounts returns how often each id is in the table.
func tableIDCounts(t *testing.T, tbl *table.Table) map[int64]int {
	t.Helper()
	at := icebergtest.ReadAll(t, tbl, nil, "id")
	defer at.Release()
	out := map[int64]int{}
	for _, s := range icebergtest.RowStrings(at, []string{"id"}) {
		m := idPattern.FindStringSubmatch(s)
		id, _ := strconv.ParseInt(m[1], 10, 64)
		out[id]++
	}
	return out
}

// TestLateRowsScenario is issue 16's scenario as a regression test: 30 one-second
// windows of 2,000 rows each from a periodic source, with rows 3 s late (within
// allowed_lateness_seconds=5) and rows 15 s late (beyond it). Every window is
// committed, every row is in the table exactly once or in the dead letter output
// exactly once, the 3 s-late rows of the append write are in the table and the 15
// s-late rows of both modes in the dead letter output. Before the fix, the append
// write lost 14-18 of 30 windows (their on-time panes reported skipped after a late
// pane had moved the token past them) and single late rows in both modes.
func TestLateRowsScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("a 35 s streaming run")
	}
	for _, mode := range []iceberg.Mode{iceberg.Append, iceberg.MergeOnRead} {
		t.Run(string(mode), func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			ctx := context.Background()
			lc := icebergtest.NewLocalCatalog(t)
			cfg := iceberg.WriteConfig{Table: "db.late", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "late",
				Mode: mode}
			if mode == iceberg.MergeOnRead {
				cfg.ChangeTypeColumn, cfg.EqualityColumns = "op", []string{"id"}
				cfg.ChangeTypeMap = map[string]string{"c": iceberg.ChangeInsert}
				cfg = cfg.With(iceberg.WithNumShards(4))
			} else {
				cfg.Drop = []string{"op", "_commit_snapshot_sequence_number"}
			}
			cfg = cfg.With(iceberg.WithTriggeringFrequency(time.Second), iceberg.WithAllowedLateness(lateAllowedS*time.Second))
			const windows = 30
			start := time.Now().Add(3 * time.Second).Truncate(time.Second)
			end := start.Add(windows * time.Second)
			p, s := beam.NewPipelineWithRoot()
			imp := periodic.Impulse(s, start, end, lateTickMs*time.Millisecond, false)
			rows := beam.ParDo(s, &lateTickFn{StartMs: start.UnixMilli(), Short: true, Long: true}, imp)
			res, err := iceberg.TryWrite(s, cfg, rows)
			if err != nil {
				t.Fatal(err)
			}
			runN++
			key := fmt.Sprintf("%s#%d", t.Name(), runN)
			beam.ParDo0(s, &recordSnapshotsFn{Key: key}, res.Snapshots)
			beam.ParDo0(s, &recordDeadFn{Key: key}, res.DeadLetter)
			if err := ptest.Run(p); err != nil {
				t.Fatal(err)
			}
			snapMu.Lock()
			snaps, dead := snapOut[key], deadOut[key]
			snapMu.Unlock()

			tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "late"})
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, tbl)
			inTable := tableIDCounts(t, tbl)
			inDead := map[int64]int{}
			for _, id := range deadIDs(t, dead) {
				inDead[id]++
			}
			committed := map[int64]bool{}
			for _, si := range snaps {
				if !si.Late && !si.Skipped {
					committed[si.WindowEndMs] = true
				}
			}
			for w := start.Add(time.Second); !w.After(end); w = w.Add(time.Second) {
				if !committed[w.UnixMilli()-1] {
					t.Errorf("window ending %s was not committed", w.Format(time.RFC3339Nano))
				}
			}
			var lost, doubled, shortDead, longTable []int64
			ticks := int64(windows * 1000 / lateTickMs)
			for tick := range ticks {
				ids := make([]int64, 0, lateTickRows+2)
				for j := range int64(lateTickRows) {
					ids = append(ids, tick*1000+j)
				}
				if tick >= lateFrom && tick%10 == 0 {
					ids = append(ids, tick*1000+900, tick*1000+950)
				}
				for _, id := range ids {
					switch n := inTable[id] + inDead[id]; {
					case n == 0:
						lost = append(lost, id)
					case n > 1:
						doubled = append(doubled, id)
					}
					if id%1000 == 900 && inDead[id] > 0 && mode == iceberg.Append {
						shortDead = append(shortDead, id)
					}
					if id%1000 == 950 && inTable[id] > 0 {
						longTable = append(longTable, id)
					}
				}
			}
			if len(lost) > 0 || len(doubled) > 0 {
				t.Errorf("%d rows lost (first %v), %d in two places or twice (first %v)",
					len(lost), lost[:min(len(lost), 10)], len(doubled), doubled[:min(len(doubled), 10)])
			}
			if len(shortDead) > 0 {
				t.Errorf("rows 3 s late (within allowed lateness) went to the dead letter output: %v", shortDead)
			}
			if len(longTable) > 0 {
				t.Errorf("rows 15 s late (beyond allowed lateness) were committed: %v", longTable)
			}
			if t.Failed() {
				for _, si := range snaps {
					t.Logf("snapshot info %+v", si)
				}
				for _, d := range dead {
					t.Logf("dead letter %+v", d)
				}
			}
		})
	}
}
