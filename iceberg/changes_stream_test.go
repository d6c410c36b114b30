package iceberg_test

import (
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg"
)

// TestReadChangesStreamingEnds reads with streaming over ranges whose end is already in
// the table (to_snapshot, or a to_timestamp followed by a later snapshot): the
// continuous read emits exactly the bounded read's rows and ends by itself.
func TestReadChangesStreamingEnds(t *testing.T) {
	f := newChangesFixture(t)
	id := func(i int) int64 { return f.snaps[i].SnapshotID }
	cases := []struct {
		name string
		opts []iceberg.ChangesOption
		want []any
	}{
		{"earliest to s3", []iceberg.ChangesOption{iceberg.WithToSnapshot(id(3))},
			append(append(f.expected(1, nil), f.expected(2, nil)...), f.expected(3, nil)...)},
		{"s1 to s3", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(1)), iceberg.WithToSnapshot(id(3))},
			append(f.expected(2, nil), f.expected(3, nil)...)},
		{"latest to s2", []iceberg.ChangesOption{iceberg.WithStartingStrategy(iceberg.StartLatest), iceberg.WithToSnapshot(id(2))}, f.expected(2, nil)},
		{"to timestamp of s2", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(1)), iceberg.WithToTimestamp(timeOf(f.snaps[2]))}, f.expected(2, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			opts := append([]iceberg.ChangesOption{iceberg.WithChangesStreaming(true), iceberg.WithChangesPollInterval(time.Second)}, c.opts...)
			got, err := iceberg.TryReadChanges(s, f.config(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			passert.Equals(s, got, c.want...)
			ptest.RunAndValidate(t, p)
		})
	}
}

// TestReadChangesStreamingLive runs a continuous changelog read (1 s polls) while the
// test commits to the table: the base snapshot's INSERTs come first, then the DELETEs
// of a deletion-vector commit and the UPDATE_BEFORE/UPDATE_AFTER pairs of an update,
// each with its snapshot's id and sequence number and each while the read still runs
// (long before its end), and the read ends at to_timestamp. It logs the latency from
// each commit to its first row.
func TestReadChangesStreamingLive(t *testing.T) {
	f, steps := newChangesSteps(t)
	steps[0]() // snapshot 1, the base: the read starts with its INSERTs
	key := t.Name()
	start := time.Now()
	until := start.Add(10 * time.Second)
	p, s := beam.NewPipelineWithRoot()
	rows := iceberg.ReadChanges(s, f.config(), iceberg.WithChangesStreaming(true),
		iceberg.WithChangesPollInterval(time.Second), iceberg.WithToTimestamp(until))
	beam.ParDo0(s, &recordFn{Key: key}, rows)

	committed := make([]time.Time, len(steps)+1)
	done := make(chan bool)
	go func() {
		// The base's rows show the read runs; commit the other snapshots one poll apart.
		if !waitArrivals(key, 1, until) {
			done <- false
			return
		}
		for i, step := range steps[1:] {
			time.Sleep(1200 * time.Millisecond)
			step()
			committed[i+2] = time.Now()
		}
		done <- true
	}()
	ptest.RunAndValidate(t, p)
	ended := time.Now()
	if !<-done {
		t.Fatalf("no row within %v of the start", until.Sub(start))
	}
	if len(f.snaps) != 4 {
		t.Fatalf("the test made %d snapshots, want 3", len(f.snaps)-1)
	}
	for i := 2; i < len(f.snaps); i++ {
		if f.snaps[i].TimestampMs > until.UnixMilli() {
			t.Fatalf("snapshot %d committed after to_timestamp (the machine is too slow for this test)", i)
		}
	}
	got := arrivals(key)
	sameRows(t, got, append(append(f.expected(1, nil), f.expected(2, nil)...), f.expected(3, nil)...))

	// Each snapshot's rows arrive soon after its commit: before to_timestamp, so
	// not only when the read ends and its last windows close.
	first := map[int64]time.Time{}
	for _, a := range got {
		id, _ := a.row.Get(iceberg.CommitSnapshotIDColumn)
		if ft, ok := first[id.(int64)]; !ok || a.at.Before(ft) {
			first[id.(int64)] = a.at
		}
		if a.at.After(until) {
			t.Errorf("row of snapshot %v arrived %v after to_timestamp", id, a.at.Sub(until))
		}
	}
	for i := 2; i < len(f.snaps); i++ {
		t.Logf("snapshot %d: first change row %v after the commit returned", i, first[f.snaps[i].SnapshotID].Sub(committed[i]).Round(time.Millisecond))
	}
	if ended.Before(until) {
		t.Errorf("the read ended %v before to_timestamp", until.Sub(ended))
	}
	t.Logf("the read ended %v after to_timestamp", ended.Sub(until).Round(time.Millisecond))
}
