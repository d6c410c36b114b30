package write

import (
	"context"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// A batch (global window) append writes its rows and structs to Arrow on a goroutine
// of its own (the appender), fed chunks by the bundle's goroutine, which routes each
// element to its file buffer. Without it, one goroutine made the elements (the user's
// DoFn and Beam's emit, fused into the write's stage) and appended them, while the
// Parquet encoding (a datafile.Writer's goroutine) kept the second core only half busy.
// The appender is the only goroutine touching the file buffers while it holds chunks:
// the bundle's goroutine waits for it (sync) before it appends an element itself (a
// windowed one, or one that may evolve the table's schema), finishes or aborts the
// bundle. Dead letters come back with each chunk and are emitted by the bundle's
// goroutine, in the global window as the rows' own.

// appendChunkItems is the number of elements handed to the appender at a time.
const appendChunkItems = 1024

// appendItem is a row, or else a struct, to append to buf, the file buffer of table.
type appendItem struct {
	r     row.Row
	v     any // when r is the zero Row
	buf   *fileBuffer
	table string
}

// appended is what the appender made of one chunk: the dead letters of its bad
// elements, the chunk for reuse, or the error that stopped it.
type appended struct {
	dead  []DeadLetter
	chunk []appendItem
	err   error
}

// appender is the goroutine appending one bundle's chunks, in order. After an error it
// skips the rest of its input.
type appender struct {
	in     chan []appendItem
	out    chan appended
	queued int // chunks sent and not yet answered
}

func startAppender(ctx context.Context) *appender {
	a := &appender{in: make(chan []appendItem, 1), out: make(chan appended, 2)}
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

// appendChunk appends the elements of chunk; a panic becomes the chunk's error (the
// goroutine has no caller to recover it).
func appendChunk(ctx context.Context, chunk []appendItem) (res appended) {
	res.chunk = chunk[:0]
	defer func() {
		if p := recover(); p != nil {
			res.err = config.OpErrorf("write", chunk[0].table, "appending rows: %v", p)
		}
	}()
	for _, it := range chunk {
		var rowErr, err error
		if it.v == nil {
			if rowErr, err = it.buf.add(ctx, it.r); rowErr != nil {
				res.dead = append(res.dead, DeadLetter{Row: it.r.String(), Table: it.table, Reason: rowErr.Error()})
			}
		} else if rowErr, err = it.buf.addStruct(ctx, it.v); rowErr != nil {
			res.dead = append(res.dead, structDead(it.v, it.table, rowErr))
		}
		if err != nil {
			res.err = err
			break
		}
	}
	return res
}

// queue adds an element for the appender, handing it the chunk once full.
func (f *writeFn) queue(ctx context.Context, it appendItem, dead func(DeadLetter)) error {
	if f.chunk == nil {
		f.chunk = make([]appendItem, 0, appendChunkItems)
	}
	f.chunk = append(f.chunk, it)
	if len(f.chunk) < appendChunkItems {
		return nil
	}
	return f.hand(ctx, dead, false)
}

// hand sends the chunk built so far to the appender (started with the bundle's first
// chunk) and emits the dead letters of the chunks it answered. It keeps at most two
// chunks in the appender's hands, or none with all.
func (f *writeFn) hand(ctx context.Context, dead func(DeadLetter), all bool) error {
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

// sync waits until the appender has appended every element queued, emitting their
// dead letters: the bundle's goroutine may then use the file buffers.
func (f *writeFn) sync(ctx context.Context, dead func(DeadLetter)) error {
	if f.ap == nil && len(f.chunk) == 0 {
		return nil
	}
	return f.hand(ctx, dead, true)
}

// stopAppender stops the appender, dropping what it has not appended (after a
// failure: the bundle is retried).
func (f *writeFn) stopAppender() {
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
