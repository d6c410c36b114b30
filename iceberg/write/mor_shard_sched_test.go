package write

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icebeam/icebeam/iceberg/cdc"
)

// TestShardSchedulerRunsSideBySide: in a batch pipeline the shard windows of a bundle run
// at once, up to the limit, and every output they send reaches the bundle's
// goroutine (the handler); a job's error is returned once the others are done, and
// no job starts after it.
func TestShardSchedulerRunsSideBySide(t *testing.T) {
	j := newShardScheduler()
	j.async = true
	j.limit = 2
	var got []int
	handle := func(e shardEvent) { got = append(got, int(e.stats.Spills)) }
	// Two jobs that each wait for the other to start: they deadlock unless they
	// run at once.
	var started sync.WaitGroup
	started.Add(2)
	for i := range 2 {
		if err := j.ready(handle); err != nil {
			t.Fatal(err)
		}
		j.run(func(send func(shardEvent)) error {
			started.Done()
			done := make(chan struct{})
			go func() { started.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				return errors.New("the jobs did not run at once")
			}
			for k := range 100 { // more than the events' buffer
				send(shardEvent{stats: &cdc.ShardStats{Spills: i*1000 + k}})
			}
			return nil
		}, handle)
	}
	if err := j.wait(handle); err != nil {
		t.Fatal(err)
	}
	if len(got) != 200 {
		t.Fatalf("handled %d outputs, want 200", len(got))
	}
	seen := map[int]bool{}
	for _, v := range got {
		seen[v] = true
	}
	for i := range 2 {
		for k := range 100 {
			if !seen[i*1000+k] {
				t.Fatalf("output %d of job %d lost", k, i)
			}
		}
	}

	// A failed job: ready returns its error once the job still running is done.
	boom := errors.New("boom")
	release := make(chan struct{})
	var ran bool
	if err := j.ready(handle); err != nil {
		t.Fatal(err)
	}
	j.run(func(send func(shardEvent)) error { <-release; ran = true; return nil }, handle)
	if err := j.ready(handle); err != nil {
		t.Fatal(err)
	}
	j.run(func(send func(shardEvent)) error { return boom }, handle)
	go func() { time.Sleep(50 * time.Millisecond); close(release) }()
	if err := j.ready(handle); !errors.Is(err, boom) {
		t.Fatalf("ready after a failed job: %v, want %v", err, boom)
	}
	if j.running != 0 || !ran {
		t.Fatalf("%d jobs still running (the blocked one ran: %v) when the error was returned", j.running, ran)
	}

	// A job that panics fails the bundle with the panic, not the process.
	if err := j.ready(handle); err != nil {
		t.Fatal(err)
	}
	j.run(func(send func(shardEvent)) error { panic("shard went wrong") }, handle)
	if err := j.wait(handle); err == nil || !strings.Contains(err.Error(), "shard went wrong") {
		t.Fatalf("a job's panic: %v", err)
	}
}

// TestShardSchedulerInline: in a windowed pipeline each job runs inline, its outputs
// handled before run returns, its error returned by run.
func TestShardSchedulerInline(t *testing.T) {
	j := newShardScheduler()
	var got int
	handle := func(e shardEvent) { got++ }
	if err := j.ready(handle); err != nil {
		t.Fatal(err)
	}
	err := j.run(func(send func(shardEvent)) error {
		send(shardEvent{stats: &cdc.ShardStats{}})
		return errors.New("boom")
	}, handle)
	if got != 1 || err == nil {
		t.Fatalf("inline job: %d outputs handled, error %v; want 1 and boom", got, err)
	}
}
