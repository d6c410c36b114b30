package write

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"

	"github.com/icebeam/icebeam/iceberg/cdc"
)

// shardEvent is one output of a shard's window for the bundle's goroutine to
// emit (out, dead, or stats to count), or the end of its job (done, with its
// error).
type shardEvent struct {
	out   *shardOut
	dead  *DeadLetter
	stats *cdc.ShardStats
	done  bool
	err   error
}

// shardScheduler runs the finish step of the shard windows of one bundle of
// changeShardFn (a job: collapse, key resolution, new rows), inline or, when async,
// on goroutines, up to limit (GOMAXPROCS) at once.
//
// What runs concurrently, and why: in a batch pipeline a bundle may hold many shards
// (all in the global window), and a runner that runs a bundle's shards one after the
// other (prism does) would use one core for them; so each shard's job runs on a
// goroutine of its own while the bundle's goroutine reads and sorts the next shard's
// packets (Beam's iterator is valid only during its ProcessElement call, so the
// sort stays there). What does not: Beam's emitters are not safe for concurrent
// use, so a job sends its outputs as shardEvents on a channel and the bundle's
// goroutine emits them (with the handler of its current call) when it waits for a
// free slot (ready) and, at the latest, in FinishBundle (wait). Outputs emitted in
// FinishBundle are in the global window, so a windowed pipeline's shards run inline
// (async false) and their outputs keep the window and pane of their input.
//
// A job's error is returned once the others are done, and no job starts after it;
// a job that panics fails the bundle, not the worker. The jobs of a bundle that
// failed may still run when the next bundle starts: abandon drops their outputs.
type shardScheduler struct {
	async   bool
	limit   int
	running int
	events  chan shardEvent
	err     error // the first job's error
}

func newShardScheduler() *shardScheduler {
	return &shardScheduler{limit: goruntime.GOMAXPROCS(0), events: make(chan shardEvent, 64)}
}

// ready waits until a job can start: until fewer than limit run, handling the
// outputs sent meanwhile. It returns the error of a job that failed (after waiting
// for the others): then no job may start.
func (j *shardScheduler) ready(handle func(shardEvent)) error {
	if !j.async {
		return nil
	}
	for j.running >= j.limit && j.err == nil {
		j.handle(<-j.events, handle)
	}
	for drained := false; !drained && j.err == nil; {
		select {
		case e := <-j.events:
			j.handle(e, handle)
		default:
			drained = true
		}
	}
	if j.err != nil {
		return j.wait(handle)
	}
	return nil
}

// run runs job, which sends its outputs with send: on a goroutine when async
// (call ready first), else inline, straight to handle.
func (j *shardScheduler) run(job func(send func(shardEvent)) error, handle func(shardEvent)) error {
	if !j.async {
		return job(handle)
	}
	j.running++
	go func() {
		var err error
		defer func() {
			// A panic fails the bundle, as on the bundle's goroutine, rather than
			// the worker process.
			if p := recover(); p != nil {
				err = fmt.Errorf("panic in a shard window: %v\n%s", p, debug.Stack())
			}
			j.events <- shardEvent{done: true, err: err}
		}()
		err = job(func(e shardEvent) { j.events <- e })
	}()
	return nil
}

// wait handles the outputs of the running jobs until they are all done, and
// returns the first error of a job.
func (j *shardScheduler) wait(handle func(shardEvent)) error {
	for j.running > 0 {
		j.handle(<-j.events, handle)
	}
	err := j.err
	j.err = nil
	return err
}

func (j *shardScheduler) handle(e shardEvent, handle func(shardEvent)) {
	if !e.done {
		handle(e)
		return
	}
	j.running--
	if e.err != nil && j.err == nil {
		j.err = e.err
	}
}

// abandon lets the jobs of a bundle that failed end: their outputs are dropped.
func (j *shardScheduler) abandon() {
	if j.running == 0 {
		return
	}
	go func() {
		for j.running > 0 {
			if e := <-j.events; e.done {
				j.running--
			}
		}
	}()
}
