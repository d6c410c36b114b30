package write

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// The hash distribution's router packs rows on a goroutine of its own (the packer),
// fed chunks of rows by the bundle's goroutine. The per-bundle writers of
// distribution_mode=none overlap the making of rows with the Parquet encoding (a
// datafile.Writer's goroutine); the hash distribution writes only after the shuffle, so
// without the packer its first stage made, routed and packed every row on one
// goroutine while the second core idled, and the Parquet encoding then came on top.
// Emitters are used only on the bundle's goroutine: the packer returns its packets
// and dead letters, which the bundle's goroutine emits. The packer never outlives
// the bundle: FinishBundle waits for it, a failure stops it.

// packChunkRows is the number of rows handed to the packer at a time; with the
// chunk being filled and the one queued, at most three chunks of rows are held.
const packChunkRows = 1024

// windowedRow is a row and its window.
type windowedRow struct {
	w beam.Window
	r row.Row
}

// shufflePacket is a packet to emit to the shuffle under key, in the window ending
// at win.
type shufflePacket struct {
	win    int64
	key    string
	packet []byte
}

// timedDead is a dead letter and the end of its row's window (rewindow puts it
// back there: dead letters emitted at the end of a bundle are in the global window).
type timedDead struct {
	ts beam.EventTime
	d  DeadLetter
}

// packed is what the packer made of one chunk: packets to emit, dead letters, the
// chunk for reuse, or the error that stopped it.
type packed struct {
	packets []shufflePacket
	dead    []timedDead
	chunk   []windowedRow
	err     error
}

// emit emits p's packets and dead letters.
func (p *packed) emit(emit func(beam.EventTime, string, []byte), dead func(beam.EventTime, DeadLetter)) {
	for _, sp := range p.packets {
		emit(mtime.FromMilliseconds(sp.win), sp.key, sp.packet)
	}
	for _, d := range p.dead {
		dead(d.ts, d.d)
	}
}

// packer is the goroutine packing one bundle's rows: it reads chunks from in and
// sends what it made of each to out, which it closes when in is closed. After an
// error it skips the rest of its input.
type packer struct {
	in  chan []windowedRow
	out chan packed
}

func (f *hashRouteFn) startPacker(ctx context.Context) {
	pk := &packer{in: make(chan []windowedRow, 1), out: make(chan packed, 4)}
	f.pk = pk
	go func() {
		defer close(pk.out)
		failed := false
		for chunk := range pk.in {
			if failed {
				continue
			}
			out := f.packChunk(ctx, chunk)
			failed = out.err != nil
			pk.out <- out
		}
	}()
}

// packChunk packs the rows of chunk; a panic becomes the chunk's error (the
// goroutine has no caller to recover it).
func (f *hashRouteFn) packChunk(ctx context.Context, chunk []windowedRow) (out packed) {
	defer func() {
		if p := recover(); p != nil {
			out.err = config.OpErrorf("write", f.Spec.Table, "packing rows: %v", p)
		}
	}()
	for _, wr := range chunk {
		if err := f.pack(ctx, wr.w, wr.r, &out); err != nil {
			out.err = err
			break
		}
	}
	clear(chunk)
	out.chunk = chunk[:0]
	return out
}

// hand gives the full chunk to the packer, started with the bundle's first chunk,
// emitting what the packer returns meanwhile. An error of the packer stops it.
func (f *hashRouteFn) hand(ctx context.Context, emit func(beam.EventTime, string, []byte), dead func(beam.EventTime, DeadLetter)) error {
	if f.pk == nil {
		f.startPacker(ctx)
	}
	chunk := f.chunk
	f.chunk = nil
	for chunk != nil {
		select {
		case f.pk.in <- chunk:
			chunk = nil
		case out := <-f.pk.out:
			if err := f.took(out, emit, dead); err != nil {
				return err
			}
		}
	}
	for {
		select {
		case out := <-f.pk.out:
			if err := f.took(out, emit, dead); err != nil {
				return err
			}
		default:
			if f.chunk == nil {
				f.chunk = make([]windowedRow, 0, packChunkRows)
			}
			return nil
		}
	}
}

// took emits what the packer made of a chunk and keeps the chunk for reuse; the
// packer's error stops it and is returned.
func (f *hashRouteFn) took(out packed, emit func(beam.EventTime, string, []byte), dead func(beam.EventTime, DeadLetter)) error {
	if out.err != nil {
		f.stopPacker()
		return out.err
	}
	out.emit(emit, dead)
	if f.chunk == nil {
		f.chunk = out.chunk
	}
	return nil
}

// drain packs the rows left in the chunk and waits for the packer to finish,
// emitting what it returns. A bundle too small to fill a chunk is packed here,
// without a packer.
func (f *hashRouteFn) drain(ctx context.Context, emit func(beam.EventTime, string, []byte), dead func(beam.EventTime, DeadLetter)) error {
	if f.pk == nil {
		out := f.packChunk(ctx, f.chunk)
		f.chunk = out.chunk
		if out.err != nil {
			return out.err
		}
		out.emit(emit, dead)
		return nil
	}
	if len(f.chunk) > 0 {
		if err := f.hand(ctx, emit, dead); err != nil {
			return err
		}
	}
	pk := f.pk
	close(pk.in)
	f.pk = nil
	for out := range pk.out {
		if out.err != nil {
			for range pk.out {
			}
			return out.err
		}
		out.emit(emit, dead)
	}
	return nil
}

// stopPacker stops the packer, if running, and waits for it.
func (f *hashRouteFn) stopPacker() {
	if f.pk == nil {
		return
	}
	close(f.pk.in)
	for range f.pk.out {
	}
	f.pk = nil
}
