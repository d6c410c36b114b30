//go:build interop

package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/icebeam/icebeam/testing/icebergtest"
)

// The "icebeam_dvmerge" scenarios: deletion vectors merged across writers. Each Spark
// leg gets a v3 table of its own, and on it
//
//  1. iceberg.Write (merge-on-read) deletes rows of every base data file: icebeam's DVs;
//  2. that leg's Spark runs a merge-on-read DELETE on rows of the same data files, so
//     its DVs must merge icebeam's (engines.py --dv-merge-table);
//  3. iceberg.Write deletes and upserts more rows of those files, merging Spark's DVs;
//
// after each step the table must hold at most one live DV per data file
// (icebergtest.CheckTable), and each merge must have replaced the DVs before it. Every
// engine then reads every leg's table (expected/icebeam_dvmerge.json).

// dvMergeSparkDelete is the predicate of step 2: a tenth of the rows of every base
// data file, none of which step 1 touched.
const dvMergeSparkDelete = "id % 10 = 1 AND id < 30000"

// dvMergeTable is one leg's table between the steps.
type dvMergeTable struct {
	leg  string
	m    *morTable
	base []string // the data files of the appends
}

// dvMergeTables are the tables step 1 wrote, for steps 2 and 3 (TestInterop runs the
// steps in order).
var dvMergeTables []dvMergeTable

// dvMergeLegs names the Spark legs: the first leg ("spark") and envSparkLegs'.
func dvMergeLegs(t *testing.T) []string {
	legs := []string{"spark"}
	for _, l := range sparkLegs(t) {
		legs = append(legs, l.Name)
	}
	return legs
}

// identSafe is name with every character that is not a letter or digit made "_", as
// engines.py names a leg's namespace.
func identSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// writeDVMergeFirst is step 1: one table per Spark leg, 30,000 rows in two appends,
// then a CDC batch deleting the ids ending in 3 (a DV on every base data file) and
// upserting those ending in 7.
func writeDVMergeFirst(t *testing.T) {
	cat, err := icebergtest.NewLocalCatalogAt(catalogDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	dvMergeTables = nil
	for _, leg := range dvMergeLegs(t) {
		m := newMORTable(t, cat, "go_icebeam.v3_dvmerge_"+identSafe(leg), [2]int64{0, 20000}, [2]int64{20000, 30000})
		var base []string
		for _, df := range icebergtest.DataFiles(t, m.load()) {
			base = append(base, df.FilePath())
		}
		var b []changeSpec
		for id := int64(0); id < 30000; id++ {
			switch id % 10 {
			case 3:
				b = append(b, m.change("d", id, id))
			case 7:
				b = append(b, m.change("u", id, id+500000))
			}
		}
		m.apply(b)
		tbl := m.load()
		icebergtest.RequireValid(t, tbl)
		dvs := icebergtest.LiveDVs(t, tbl)
		for _, df := range base {
			if len(dvs[df]) != 1 {
				t.Fatalf("%s: base data file %s has %d DVs after icebeam's batch, want 1", m.ident, df, len(dvs[df]))
			}
		}
		dvMergeTables = append(dvMergeTables, dvMergeTable{leg, m, base})
	}
}

// sparkDVMerge is step 2: each Spark leg's engines.py deletes dvMergeSparkDelete from
// its table, all legs at once (their catalog writes take turns, see engines.py).
func sparkDVMerge(t *testing.T) {
	if len(dvMergeTables) == 0 {
		t.Fatal("no dvmerge tables: step write/icebeam-dvmerge did not run")
	}
	work := workDir(t)
	legs := map[string]sparkLeg{"spark": {Name: "spark", Python: mustEnv(t, envPython)}}
	for _, l := range sparkLegs(t) {
		legs[l.Name] = l
	}
	var wg sync.WaitGroup
	errs := make([]error, len(dvMergeTables))
	for i, d := range dvMergeTables {
		l := legs[d.leg]
		args := []string{filepath.Join(sourceDir(t), "engines.py"), "--work", work, "--jars", mustEnv(t, envJars),
			"--spark-name", l.Name, "--dv-merge-table", d.m.ident, "--dv-merge-delete", dvMergeSparkDelete}
		if l.Runtime != "" {
			args = append(args, "--spark-runtime", l.Runtime)
		}
		cmd := exec.Command(l.Python, args...)
		cmd.Env = append(os.Environ(), "TZ=UTC", "PYSPARK_PYTHON="+l.Python, "ICEBEAM_SPARK_DRIVER_MEMORY=1g")
		logPath := filepath.Join(work, "engines-dvmerge-"+l.Name+".log")
		f, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Run()
			f.Close()
		}()
	}
	wg.Wait()
	for i, d := range dvMergeTables {
		if errs[i] != nil {
			out, _ := os.ReadFile(filepath.Join(work, "engines-dvmerge-"+d.leg+".log"))
			os.Stdout.Write(out)
			t.Errorf("engines.py --dv-merge-table %s (%s): %v (see its output above)", d.m.ident, d.leg, errs[i])
		}
	}
}

// writeDVMergeLast checks step 2 and is step 3: Spark's DELETE must have replaced
// icebeam's DV of every base data file with one that holds both; then an icebeam CDC
// batch deletes the ids ending in 5 and upserts those ending in 9 below 3000, which
// replaces Spark's DVs. It writes the answers to expected/icebeam_dvmerge.json.
func writeDVMergeLast(t *testing.T) {
	// A catalog of its own: the Spark legs wrote the file since step 1's was opened.
	cat, err := icebergtest.NewLocalCatalogAt(catalogDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	exp := Expected{Writer: "icebeam_dvmerge"}
	for _, d := range dvMergeTables {
		m := d.m
		m.cat = cat
		tbl := m.load()
		icebergtest.RequireValid(t, tbl)
		sum, base := tbl.CurrentSnapshot().Summary, d.base
		dvs := icebergtest.LiveDVs(t, tbl)
		for _, df := range base {
			if len(dvs[df]) != 1 {
				t.Fatalf("%s: base data file %s has %d DVs after %s's DELETE, want 1", m.ident, df, len(dvs[df]), d.leg)
			}
		}
		if removed, _ := strconv.Atoi(sum.Properties["removed-dvs"]); sum.Operation != "delete" && sum.Operation != "overwrite" ||
			removed != len(base) {
			t.Fatalf("%s: %s's DELETE committed %s with removed-dvs %s, want it to replace the DVs of the %d base data files (summary %v)",
				m.ident, d.leg, sum.Operation, sum.Properties["removed-dvs"], len(base), sum.Properties)
		}
		for id := int64(1); id < 30000; id += 10 {
			delete(m.live, id)
		}
		var b []changeSpec
		for id := int64(5); id < 30000; id += 10 {
			b = append(b, m.change("d", id, id))
		}
		for id := int64(9); id < 3000; id += 10 {
			b = append(b, m.change("u", id, id+600000))
		}
		m.apply(b)
		tbl = m.load()
		icebergtest.RequireValid(t, tbl)
		if removed, _ := strconv.Atoi(tbl.CurrentSnapshot().Summary.Properties["removed-dvs"]); removed < len(base) {
			t.Fatalf("%s: icebeam's batch after %s's DELETE replaced %d DVs, want at least %d", m.ident, d.leg, removed, len(base))
		}
		sc := scenarioFor(t, fmt.Sprintf("v3 DVs merged: icebeam CDC, then %s DELETE, then icebeam CDC", d.leg),
			m.ident, 3, m.live, "PUFFIN/position")
		sc.Lineage = lineageQuery(t, cat, m.ident)
		exp.Scenarios = append(exp.Scenarios, sc)
	}
	if err := WriteJSON(filepath.Join(expectedDir(t), "icebeam_dvmerge.json"), exp); err != nil {
		t.Fatal(err)
	}
}
