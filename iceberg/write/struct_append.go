package write

import (
	"context"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// A batch (global window) struct write appends its structs to Arrow on a goroutine of
// its own (the appender), fed chunks of structs by the bundle's goroutine. Without
// it, one goroutine made the elements (the user's DoFn and Beam's emit, fused into the
// write's stage) and appended them, while the Parquet encoding (a FileWriter's
// goroutine) kept the second core only half busy. The appender is the only goroutine
// touching the file buffers while it holds chunks: the bundle's goroutine waits for it
// (sync) before it appends a Row itself, finishes or aborts the bundle. Dead letters
// come back with each chunk and are emitted by the bundle's goroutine, in the global
// window as the rows' own.

// appendChunkStructs is the number of structs handed to the appender at a time.
const appendChunkStructs = 1024

// structItem is a struct to append to buf, the file buffer of table.
type structItem struct {
	v     any
	buf   *fileBuffer
	table string
}

// appended is what the appender made of one chunk: the dead letters of its bad
// structs, the chunk for reuse, or the error that stopped it.
type appended struct {
	dead  []DeadLetter
	chunk []structItem
	err   error
}

// structAppender is the goroutine appending one bundle's chunks, in order. After an
// error it skips the rest of its input.
type structAppender struct {
	in     chan []structItem
	out    chan appended
	queued int // chunks sent and not yet answered
}

func startAppender(ctx context.Context) *structAppender {
	a := &structAppender{in: make(chan []structItem, 1), out: make(chan appended, 2)}
	go func() {
		defer close(a.out)
		failed := false
		for chunk := range a.in {
			res := appended{chunk: chunk[:0]}
			if !failed {
				res = appendChunk(ctx, chunk)
				failed = res.err != nil
			}
			clear(chunk)
			a.out <- res
		}
	}()
	return a
}

// appendChunk appends the structs of chunk; a panic becomes the chunk's error (the
// goroutine has no caller to recover it).
func appendChunk(ctx context.Context, chunk []structItem) (res appended) {
	res.chunk = chunk[:0]
	defer func() {
		if p := recover(); p != nil {
			res.err = config.OpErrorf("write", chunk[0].table, "appending rows: %v", p)
		}
	}()
	for _, it := range chunk {
		rowErr, err := it.buf.addStruct(ctx, it.v)
		if rowErr != nil {
			res.dead = append(res.dead, structDead(it.v, it.table, rowErr))
		}
		if err != nil {
			res.err = err
			break
		}
	}
	return res
}

// queue adds a struct for the appender, handing it the chunk once full.
func (f *structWriteFn) queue(ctx context.Context, it structItem, dead func(DeadLetter)) error {
	if f.chunk == nil {
		f.chunk = make([]structItem, 0, appendChunkStructs)
	}
	f.chunk = append(f.chunk, it)
	if len(f.chunk) < appendChunkStructs {
		return nil
	}
	return f.hand(ctx, dead, false)
}

// hand sends the chunk built so far to the appender (started with the bundle's first
// chunk) and emits the dead letters of the chunks it answered. It keeps at most two
// chunks in the appender's hands, or none with all.
func (f *structWriteFn) hand(ctx context.Context, dead func(DeadLetter), all bool) error {
	if len(f.chunk) > 0 {
		if f.ap == nil {
			f.ap = startAppender(ctx)
		}
		f.ap.in <- f.chunk
		f.ap.queued++
		f.chunk = nil
	}
	var err error
	for f.ap != nil && (f.ap.queued > 2 || (all && f.ap.queued > 0)) {
		res := <-f.ap.out
		f.ap.queued--
		for _, d := range res.dead {
			dead(d)
		}
		if err == nil {
			err = res.err
		}
		if f.chunk == nil {
			f.chunk = res.chunk
		}
	}
	return err
}

// sync waits until the appender has appended every struct queued, emitting their
// dead letters: the bundle's goroutine may then use the file buffers.
func (f *structWriteFn) sync(ctx context.Context, dead func(DeadLetter)) error {
	if f.ap == nil && len(f.chunk) == 0 {
		return nil
	}
	return f.hand(ctx, dead, true)
}

// stopAppender stops the appender, dropping what it has not appended (after a
// failure: the bundle is retried).
func (f *structWriteFn) stopAppender() {
	clear(f.chunk)
	f.chunk = f.chunk[:0]
	if f.ap == nil {
		return
	}
	close(f.ap.in)
	for range f.ap.out {
	}
	f.ap = nil
}
