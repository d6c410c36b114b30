package read

import (
	"context"
	"errors"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// planFn plans the scan once at run time (after an Impulse) with the filter pushed
// down to manifest, partition and column-statistics pruning, and emits one Task per
// file scan task.
type planFn struct {
	// Spec is the scan, resolved at construction.
	Spec Spec
}

func (fn *planFn) ProcessElement(ctx context.Context, _ []byte, emit func(Task)) error {
	tbl, err := catalogs.LoadTable(ctx, fn.Spec.CatalogName, fn.Spec.Props(), fn.Spec.Table, 0)
	if err != nil {
		return err
	}
	if err := fn.Spec.CheckExpected(tbl.Schema()); err != nil {
		return err
	}
	tasks, err := planFiltered(ctx, fn.Spec, func(s Spec) (*table.Scan, error) { return s.NewScan(tbl) })
	if err != nil {
		return config.OpErrorf("read", fn.Spec.Table, "plan: %w", err)
	}
	meta, loc := tbl.Metadata(), tbl.MetadataLocation()
	var bytes int64
	for _, t := range tasks {
		task, err := newTask(meta, loc, t)
		if err != nil {
			return config.WrapOp("read", fn.Spec.Table, err)
		}
		bytes += task.Size
		emit(task)
	}
	filesPlanned.Inc(ctx, int64(len(tasks)))
	bytesPlanned.Inc(ctx, bytes)
	log.Infof(ctx, "iceberg: read %s: planned %d file scan tasks (%d bytes)", fn.Spec.Table, len(tasks), bytes)
	return nil
}

// planFiltered plans the scan newScan makes of spec, its filter pushed down to
// manifest, partition and column-statistics pruning. iceberg-go v0.7.0 cannot read
// the column statistics of data files written before their column widened (the
// 4-byte bounds of an int column now long, of a float now double) and fails the
// planning; planFiltered then plans the scan of spec without the filter, every
// file: each task's read still applies the filter to its rows.
func planFiltered(ctx context.Context, spec Spec, newScan func(Spec) (*table.Scan, error)) ([]table.FileScanTask, error) {
	scan, err := newScan(spec)
	if err != nil {
		return nil, err
	}
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if errors.Is(err, ibg.ErrInvalidBinSerialization) && spec.Filter != "" {
		log.Warnf(ctx, "iceberg: read %s: planning with the filter failed (%v): planning every file, filtering rows as they are read", spec.Table, err)
		spec.Filter = ""
		return planFiltered(ctx, spec, newScan)
	}
	return tasks, err
}
