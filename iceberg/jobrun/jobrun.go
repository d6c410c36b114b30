// Package jobrun runs a Beam pipeline on the runner named by --runner, as
// beamx.RunWithMetrics does, and does not report a job that finished as failed
// because its runner could not return the job's metrics. Use it in a program's
// main in place of beamx.Run when you read the job's counters (icebeam's write
// counters are in the "icebeam" namespace):
//
//	pr, err := jobrun.Run(ctx, p)
//	if err != nil {
//		log.Fatal(err)
//	}
//	if jobrun.HasMetrics(pr) {
//		for _, c := range pr.Metrics().AllMetrics().Counters() {
//			fmt.Println(c.Key.Namespace, c.Key.Name, c.Result())
//		}
//	}
//
// The Go SDK's portable runner client (runners/universal/runnerlib.Execute)
// asks the job service for the job's metrics after the job reached a terminal
// state and returns an error when that call fails, even for a job that reached
// DONE. Beam Python's portable job service (the FnApiRunner) fails that call
// for longer streaming jobs (a RecursionError while it consolidates the
// metrics of many bundles): with beamx such a job that committed every window
// exits 1. A Dataflow --dry_run returns no result: Run returns a result
// without metrics then too.
package jobrun

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"google.golang.org/grpc/status"
)

// metricsErrPrefix starts the error runnerlib.Execute returns when its
// GetJobMetrics call fails (runnerlib/execute.go, newUniversalPipelineResult).
const metricsErrPrefix = "failed to get metrics"

// Run runs p on the runner of the --runner flag (prism by default) and waits
// for it. A job that finished but whose metrics the runner could not return is
// a success: Run logs a warning and returns a result without metrics.
func Run(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	pr, err := beamx.RunWithMetrics(ctx, p)
	if err != nil && MetricsOnly(err) {
		// Not Beam's log: with --environment_type=LOOPBACK the worker in this
		// process has pointed it at the job's log stream, which is closed now.
		slog.WarnContext(ctx, "the job finished, but its runner could not return its metrics; continuing without them", "error", err)
		return noMetrics{}, nil
	}
	if err != nil {
		return nil, err
	}
	if pr == nil { // a dry run (Dataflow's --dry_run) submits nothing
		return noMetrics{}, nil
	}
	return pr, nil
}

// MetricsOnly reports whether err is the error of a portable job that reached
// DONE and whose metrics could not be fetched, and of nothing else.
//
// runnerlib.Execute returns, when the metrics call fails, that call's gRPC
// error wrapped once with "failed to get metrics" if the job succeeded, and
// the job's own error wrapped with the metrics error's text if it did not; so
// only an error whose direct cause is a gRPC status qualifies.
func MetricsOnly(err error) bool {
	if err == nil || !strings.HasPrefix(err.Error(), metricsErrPrefix) {
		return false
	}
	cause := errors.Unwrap(err)
	if cause == nil {
		return false
	}
	_, isStatus := cause.(interface{ GRPCStatus() *status.Status })
	return isStatus
}

// NoMetrics returns the result of a job whose metrics were not available.
func NoMetrics() beam.PipelineResult { return noMetrics{} }

// noMetrics is the result of a job whose metrics were not available.
type noMetrics struct{}

func (noMetrics) Metrics() metrics.Results { return metrics.Results{} }
func (noMetrics) JobID() string            { return "" }

// HasMetrics reports whether pr carries the job's metrics, false for the
// result Run returns when the runner could not return them.
func HasMetrics(pr beam.PipelineResult) bool {
	_, none := pr.(noMetrics)
	return pr != nil && !none
}
