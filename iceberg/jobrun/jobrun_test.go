package jobrun

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// wrapped has the shape of the Beam SDK's internal errors.Wrap: the message,
// then the cause, and Unwrap to the cause.
type wrapped struct {
	msg   string
	cause error
}

func (e *wrapped) Error() string { return e.msg + "\n\tcaused by:\n" + e.cause.Error() }
func (e *wrapped) Unwrap() error { return e.cause }

func TestMetricsOnly(t *testing.T) {
	// What runnerlib.Execute returns (execute.go, Execute and newUniversalPipelineResult).
	metricsErr := &wrapped{metricsErrPrefix, status.Error(codes.Unknown, "Exception calling application: maximum recursion depth exceeded")}
	jobErr := errors.New("job go-job-1 failed:\nsome DoFn error")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"job DONE, metrics call failed", metricsErr, true},
		{"job failed and metrics call failed", &wrapped{metricsErr.Error(), jobErr}, false},
		{"job failed", jobErr, false},
		{"job stream broke", &wrapped{"failed to get job stream", status.Error(codes.Unavailable, "connection refused")}, false},
		{"metrics call failed inside another error", &wrapped{"run", metricsErr}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MetricsOnly(tt.err); got != tt.want {
				t.Errorf("MetricsOnly(%q) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestHasMetrics(t *testing.T) {
	if HasMetrics(noMetrics{}) {
		t.Error("HasMetrics(noMetrics{}) = true")
	}
	if HasMetrics(nil) {
		t.Error("HasMetrics(nil) = true")
	}
}
