package iceberg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/testing/icebergtest"
)

var (
	reportsMu sync.Mutex
	reports   []MaintenanceReport
)

func collectReport(r MaintenanceReport) {
	reportsMu.Lock()
	defer reportsMu.Unlock()
	reports = append(reports, r)
}

func init() { register.Function1x0(collectReport) }

// maintainedTable creates db.<name> (format version 3) from 8 appends of 50 rows and
// a DV deleting 60 of them, plus a data file that was written and never
// committed, and returns it with that file's path.
func maintainedTable(t *testing.T, cat *icebergtest.LocalCatalog, name string) (*table.Table, []string) {
	t.Helper()
	ctx := context.Background()
	sc := icebergtest.SampleSchema()
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db."+name, sc, icebergtest.WithFormatVersion(3))
	rows := icebergtest.SampleRows(400, 3)
	for i := range 8 {
		tbl = icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, rows[i*50:(i+1)*50]))
	}
	var keys []any
	for i := range 60 {
		keys = append(keys, rows[i*6][0])
	}
	tbl, n, err := icebergtest.DeleteKeysDV(ctx, tbl, "id", keys)
	if err != nil || n != 60 {
		t.Fatalf("delete: %d rows, %v", n, err)
	}
	var orphans []string
	for _, f := range icebergtest.WriteDataFiles(t, tbl, icebergtest.Records(t, sc, rows[:10]), icebergtest.Records(t, sc, rows[10:20])) {
		orphans = append(orphans, f.FilePath())
	}
	return tbl, orphans
}

// TestMaintain runs all three operations on prism: the 8 small files and their DVs
// become one file without deletes, the table reads the same rows, every snapshot but
// the newest expires, and the uncommitted file is found (a dry run) and then
// removed.
func TestMaintain(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	tbl, orphans := maintainedTable(t, cat, "maintained")
	want := icebergtest.ReadAll(t, tbl, nil)
	defer want.Release()
	zero, one, two := 0, 1, 2
	run := func(cfg MaintainConfig) MaintenanceReport {
		t.Helper()
		reports = nil
		p, s := beam.NewPipelineWithRoot()
		beam.ParDo0(s, collectReport, Maintain(s, cfg))
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
		if len(reports) != 1 {
			t.Fatalf("%d reports, want 1", len(reports))
		}
		return reports[0]
	}
	base := MaintainConfig{Table: "db.maintained", CatalogName: cat.Name, CatalogProperties: cat.Props}

	dry := base
	dry.Operations, dry.OrphanOlderThanSeconds, dry.DryRun = []string{OpRemoveOrphanFiles}, &zero, true
	rep := run(dry)
	for _, o := range orphans {
		if !slices.ContainsFunc(rep.OrphanFiles, func(f string) bool {
			return strings.HasSuffix(o, strings.TrimPrefix(f, "file://")) || strings.HasSuffix(f, strings.TrimPrefix(o, "file://"))
		}) {
			t.Errorf("dry run did not list orphan %s: %v", o, rep.OrphanFiles)
		}
	}
	if rep.OrphansRemoved != 0 || !rep.DryRun || rep.DataFilesBefore != 8 || rep.DataFilesAfter != 8 {
		t.Fatalf("dry run report %+v", rep)
	}

	cfg := base
	cfg.MinInputFiles, cfg.ExpireOlderThanSeconds, cfg.RetainLast, cfg.OrphanOlderThanSeconds = &two, &zero, &one, &zero
	rep = run(cfg)
	if rep.DataFilesBefore != 8 || rep.DeleteFilesBefore == 0 || rep.DataFilesAfter != 1 || rep.DeleteFilesAfter != 0 ||
		rep.GroupsPlanned != 1 || rep.GroupsCommitted != 1 || rep.FilesRewritten != 8 || rep.FilesAdded != 1 ||
		rep.SnapshotsExpired != 9 || rep.OrphansRemoved < len(orphans) {
		t.Fatalf("report %+v", rep)
	}
	tbl, err := cat.Catalog.LoadTable(context.Background(), tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots left, want 1", n)
	}
	got := icebergtest.ReadAll(t, tbl, nil)
	defer got.Release()
	icebergtest.EqualRows(t, want, got)
}

// TestMaintainConfig: strict parsing of the maintenance keys, and the problems
// TryMaintain finds at construction.
func TestMaintainConfig(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	maintainedTable(t, cat, "cfg")
	base := map[string]any{"table": "db.cfg", "catalog_name": cat.Name, "catalog_properties": cat.Props}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		m    map[string]any
		key  string
	}{
		{"unknown operation", with("operations", []any{"vacuum"}), KeyOperations},
		{"operation twice", with("operations", []any{"expire_snapshots", "expire_snapshots"}), KeyOperations},
		{"compaction key without compaction", with("operations", []any{"expire_snapshots"}, "min_input_files", 2), KeyMinInputFiles},
		{"dry run without orphans", with("operations", []any{"rewrite_data_files"}, "dry_run", true), KeyDryRun},
		{"retain none", with("retain_last", 0), KeyRetainLast},
		{"negative age", with("orphan_older_than_seconds", -1), KeyOrphanOlderThanSeconds},
		{"template", with("table", "db.t_{x}"), KeyTable},
		{"write key", with("mode", "append"), "mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMaintainConfig(tc.m)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key {
				t.Fatalf("error %v, want a ConfigError for %s", err, tc.key)
			}
		})
	}
	c, err := ParseMaintainConfigYAML([]byte("table: db.cfg\ncatalog_name: " + cat.Name + "\ncatalog_properties: {type: sql}\noperations: [rewrite_data_files]\ntarget_file_size_bytes: 1048576\nrewrite_all: true\n"))
	if err != nil || !c.RewriteAll || *c.TargetFileSizeBytes != 1<<20 || c.Map()["operations"] == nil {
		t.Fatalf("yaml: %+v, %v", c, err)
	}
	cfg, err := ParseMaintainConfig(with("filter", "no_such_column > 1"))
	if err != nil {
		t.Fatal(err)
	}
	_, s := beam.NewPipelineWithRoot()
	var ce *ConfigError
	if _, err := TryMaintain(s, cfg); !errors.As(err, &ce) || ce.Key != KeyFilter {
		t.Fatalf("bad filter: %v, want a ConfigError for filter", err)
	}
	cfg.Filter, cfg.Table = "", "db.missing"
	if _, err := TryMaintain(s, cfg); !errors.Is(err, ErrTableNotFound) || !strings.Contains(err.Error(), "db.missing") {
		t.Fatalf("missing table: %v", err)
	}

	// A SQLite catalog whose folder cannot be made: the error names the op and table
	// once, then the catalog and the key.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Table = "db.cfg"
	cfg.CatalogProperties = map[string]string{"type": "sql", "uri": "file:" + filepath.Join(file, "sub", "catalog.db")}
	_, err = TryMaintain(s, cfg)
	if !errors.As(err, &ce) || ce.Key != "catalog_properties.uri" || strings.Count(err.Error(), "iceberg:") != 1 ||
		!strings.HasPrefix(err.Error(), "iceberg: maintain db.cfg: open catalog ") || !strings.Contains(err.Error(), "cannot create the folder") {
		t.Fatalf("catalog folder under a file: %v, want one %q prefix, the op, the table and the key", err, "iceberg:")
	}
}
