//go:build interop

package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestInterop runs the cross-engine scenarios in order, so that Spark's JVM
// starts once:
//
//  1. each Go writer writes its tables to the shared catalog and its
//     expected answers to expected/<writer>.json (the DV merge scenarios
//     have each Spark leg delete rows between two icebeam writes: see
//     write_icebeam_dvmerge_test.go);
//  2. engines.py: Spark writes its tables (expected/spark.json), then Spark
//     SQL, PyIceberg and DuckDB check every writer's tables;
//  3. icebeam's iceberg.ReadChanges reads the changelog of Spark's v3 table
//     and checks every change row against the SQL that made it;
//  4. icebeam's iceberg.Read (and, as a reference, iceberg-go's own scan)
//     reads every writer's tables and checks them.
//
// Any disagreement fails the test; report.py prints the table afterwards.
func TestInterop(t *testing.T) {
	work := workDir(t)
	for _, d := range []string{catalogDir(t), expectedDir(t), resultsDir(t)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	timed(t, "write/icebergtest", writeIcebergtest)
	timed(t, "write/icebeam", writeIcebeam)
	timed(t, "write/icebeam-mor", writeIcebeamMOR)
	timed(t, "write/icebeam-dvmerge", writeDVMergeFirst)
	if !t.Failed() {
		timed(t, "dvmerge/spark", sparkDVMerge)
	}
	if !t.Failed() {
		timed(t, "write/icebeam-dvmerge-after-spark", writeDVMergeLast)
	}
	if t.Failed() {
		t.FailNow()
	}
	timed(t, "engines", func(t *testing.T) {
		// The first leg (Spark, PyIceberg, DuckDB) and each further Spark leg run at
		// once, each its own process and JVM; a leg's output goes to
		// engines-<leg>.log in the work folder, and is printed when it is done.
		type leg struct {
			name string
			cmd  *exec.Cmd
		}
		legs := []leg{{"spark", exec.Command(mustEnv(t, envPython), filepath.Join(sourceDir(t), "engines.py"),
			"--work", work, "--jars", mustEnv(t, envJars))}}
		legs[0].cmd.Env = append(os.Environ(), "TZ=UTC", "PYSPARK_PYTHON="+mustEnv(t, envPython))
		for _, l := range sparkLegs(t) {
			cmd := exec.Command(l.Python, filepath.Join(sourceDir(t), "engines.py"), "--work", work,
				"--jars", mustEnv(t, envJars), "--engines", "spark", "--spark-name", l.Name, "--spark-runtime", l.Runtime)
			cmd.Env = append(os.Environ(), "TZ=UTC", "PYSPARK_PYTHON="+l.Python, "ICEBEAM_SPARK_DRIVER_MEMORY=2g")
			legs = append(legs, leg{l.Name, cmd})
		}
		errs := make([]error, len(legs))
		var wg sync.WaitGroup
		for i, l := range legs {
			logPath := filepath.Join(work, "engines-"+l.name+".log")
			f, err := os.Create(logPath)
			if err != nil {
				t.Fatal(err)
			}
			l.cmd.Stdout, l.cmd.Stderr = f, f
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = l.cmd.Run()
				f.Close()
			}()
		}
		wg.Wait()
		for i, l := range legs {
			out, _ := os.ReadFile(filepath.Join(work, "engines-"+l.name+".log"))
			os.Stdout.Write(out)
			if errs[i] != nil {
				t.Errorf("engines.py (%s): %v (see its output above and results/python*.json)", l.name, errs[i])
			}
		}
	})
	timed(t, "changes/icebeam", checkSparkChanges)
	timed(t, "read/icebeam", func(t *testing.T) { readAll(t, "icebeam", newReader) })
	timed(t, "read/iceberg-go", func(t *testing.T) {
		readAll(t, "iceberg-go", func(t *testing.T, _ string, cat catalog.Catalog, _ map[string]string) readFunc {
			return iceberggoReader(t, cat)
		})
	})
}

// timed runs f as subtest name and logs how long it took.
func timed(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	start := time.Now()
	t.Run(name, f)
	fmt.Printf("interop: step %s took %s\n", name, time.Since(start).Round(100*time.Millisecond))
}

// sourceDir is this package's folder (go test runs in it).
func sourceDir(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// readAll checks every scenario of every expected file with the Go reader
// and records results/go-<engine>.json.
func readAll(t *testing.T, engine string, newReader func(*testing.T, string, catalog.Catalog, map[string]string) readFunc) {
	files, err := filepath.Glob(filepath.Join(expectedDir(t), "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no expected files in %s (%v)", expectedDir(t), err)
	}
	sort.Strings(files)
	cat, err := icebergtest.NewLocalCatalogAt(catalogDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	rd := newReader(t, cat.Name, cat.Catalog, cat.Props)
	var results []Result
	for _, f := range files {
		var exp Expected
		if err := ReadJSON(f, &exp); err != nil {
			t.Fatal(err)
		}
		for _, sc := range exp.Scenarios {
			results = append(results, checkScenario(t, engine, exp.Writer, sc, rd)...)
		}
	}
	if err := WriteJSON(filepath.Join(resultsDir(t), "go-"+engine+".json"), results); err != nil {
		t.Fatal(err)
	}
	known := loadKnown(t)
	for _, r := range results {
		if !r.OK && !known.covers(r) {
			t.Errorf("%s reading %s/%s: %s: expected %s, seen %s %s", r.Engine, r.Writer, r.Scenario, r.Check, r.Expected, r.Seen, r.Error)
		}
	}
}

// readFunc reads table with a SQL filter ("" for none) and keep columns and
// returns canonical rows (columns in keep order).
type readFunc func(table, filter string, keep []string) ([]string, error)

// checkScenario runs the full read, the queries and the lookups of sc.
func checkScenario(t *testing.T, engine, writer string, sc Scenario, read readFunc) []Result {
	t.Helper()
	var out []Result
	add := func(check, exp, seen string, err error) {
		r := Result{Engine: engine, Writer: writer, Scenario: sc.Name, Check: check, Expected: exp, Seen: seen}
		if err != nil {
			r.Error = err.Error()
			if len(r.Error) > 400 {
				r.Error = r.Error[:400]
			}
		}
		r.OK = err == nil && exp == seen
		status := "ok  "
		if !r.OK {
			status = "FAIL"
		}
		fmt.Printf("interop: %s %-9s %-12s %-40s %s: expected %s, seen %s %s\n", status, engine, writer, sc.Name, check, exp, seen, r.Error)
		out = append(out, r)
	}
	run := func(check, filter string, keep []string, count int64, sum string) {
		rows, err := read(sc.Table, filter, keep)
		if err != nil {
			add(check, fmt.Sprint(count), "error", err)
			return
		}
		var c Checksum
		for _, r := range rows {
			c.Add(r)
		}
		add(check+" rows", fmt.Sprint(count), fmt.Sprint(c.N), nil)
		add(check+" checksum", sum, c.String(), nil)
	}
	cols := make([]string, len(sc.Columns))
	for i, c := range sc.Columns {
		cols[i] = c.Name
	}
	run("all", "", cols, sc.Count, sc.Checksum)
	for _, q := range sc.Queries {
		run("query["+q.Name+"]", q.Filter, q.Keep, q.Count, q.Checksum)
	}
	if q := sc.Lineage; q != nil {
		run("lineage", q.Filter, q.Keep, q.Count, q.Checksum)
	}
	ids := make([]string, len(sc.Lookups))
	for i, lk := range sc.Lookups {
		ids[i] = fmt.Sprint(lk.ID)
	}
	rows, err := read(sc.Table, "id IN ("+strings.Join(ids, ", ")+")", cols)
	if err != nil {
		add("lookups", fmt.Sprint(len(ids)), "error", err)
		return out
	}
	byID := map[string][]string{}
	for _, r := range rows {
		id, _, _ := strings.Cut(r, "|")
		byID[id] = append(byID[id], r)
	}
	for _, lk := range sc.Lookups {
		exp := "absent"
		if lk.Row != nil {
			exp = *lk.Row
		}
		seen := "absent"
		switch got := byID[fmt.Sprint(lk.ID)]; len(got) {
		case 0:
		case 1:
			seen = got[0]
		default:
			seen = fmt.Sprint(got)
		}
		add(fmt.Sprintf("lookup id=%d", lk.ID), exp, seen, nil)
	}
	return out
}

// knownIssues are the entries of known_issues.json (see checks.py's known_for).
type knownIssues []struct {
	Engine, Writer, Scenario, Error string
	Checks                          []string // when set, the only checks the entry covers
}

func loadKnown(t *testing.T) knownIssues {
	var k knownIssues
	if err := ReadJSON(filepath.Join(sourceDir(t), "known_issues.json"), &k); err != nil {
		t.Fatal(err)
	}
	return k
}

// covers reports whether failed result r is a known issue: engine, writer and
// scenario (and checks, when the entry names them) match the entry's patterns and
// the error contains its text, as checks.py
// decides for the Python engines (report.py counts both).
func (k knownIssues) covers(r Result) bool {
	for _, e := range k {
		em, _ := path.Match(e.Engine, r.Engine)
		wm, _ := path.Match(e.Writer, r.Writer)
		sm, _ := path.Match(e.Scenario, r.Scenario)
		if !em || !wm || !sm || !strings.Contains(r.Error, e.Error) {
			continue
		}
		if e.Checks == nil {
			return true
		}
		for _, c := range e.Checks { // exactly, or by prefix before a final "*" (as checks.py)
			if prefix, ok := strings.CutSuffix(c, "*"); ok && strings.HasPrefix(r.Check, prefix) || c == r.Check {
				return true
			}
		}
	}
	return false
}
