package cdc

import (
	"encoding/binary"
	"errors"
	"fmt"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// ErrCorruptPacket is wrapped when a packet of change records cannot be decoded.
var ErrCorruptPacket = errors.New("corrupt change packet")

// Packets carry a batch of parsed changes of one shard and window across the
// shuffle: the id of the table schema their rows were parsed with (uvarint), then
// per change the encoded key (uvarint length, bytes), the sequence number (varint),
// the kind (one byte) and the packed row (uvarint length, row.AppendBody bytes).

// NewPacket starts a packet of rows of table schema schemaID.
func NewPacket(schemaID int) []byte { return binary.AppendUvarint(nil, uint64(schemaID)) }

// AppendChange appends one change to a packet.
func AppendChange(p, key []byte, seq int64, kind Kind, body []byte) []byte {
	p = binary.AppendUvarint(p, uint64(len(key)))
	p = append(p, key...)
	p = binary.AppendVarint(p, seq)
	p = append(p, byte(kind))
	p = binary.AppendUvarint(p, uint64(len(body)))
	return append(p, body...)
}

// PacketSchema returns the table schema id of packet p.
func PacketSchema(p []byte) (int, error) {
	id, n := binary.Uvarint(p)
	if n <= 0 {
		return 0, ErrCorruptPacket
	}
	return int(id), nil
}

// ReadPacket returns the schema id of packet p and calls fn with each change (the
// slices alias p).
func ReadPacket(p []byte, fn func(key []byte, seq int64, kind Kind, body []byte) error) (int, error) {
	id, n := binary.Uvarint(p)
	if n <= 0 {
		return 0, ErrCorruptPacket
	}
	off := n
	lenBytes := func() ([]byte, error) {
		l, n := binary.Uvarint(p[off:])
		if n <= 0 || uint64(len(p)-off-n) < l {
			return nil, ErrCorruptPacket
		}
		b := p[off+n : off+n+int(l)]
		off += n + int(l)
		return b, nil
	}
	for off < len(p) {
		key, err := lenBytes()
		if err != nil {
			return 0, err
		}
		seq, n := binary.Varint(p[off:])
		if n <= 0 || off+n >= len(p) {
			return 0, ErrCorruptPacket
		}
		off += n
		kind := Kind(p[off])
		off++
		if !kind.Valid() {
			return 0, fmt.Errorf("%w: change kind %d", ErrCorruptPacket, kind)
		}
		body, err := lenBytes()
		if err != nil {
			return 0, err
		}
		if err := fn(key, seq, kind, body); err != nil {
			return 0, err
		}
	}
	return int(id), nil
}

// EncodedResolution is a Resolution in a form that crosses workers (JSON-friendly):
// a shard resolves its keys, the committer decodes the resolution and brings it up
// to the snapshot it commits on (Resolver.Refresh), reading again only data files
// that changed.
type EncodedResolution struct {
	// SnapshotID is the snapshot resolved against.
	SnapshotID int64
	// Keys are the resolved keys, each encoded as a row (row.Encode) of the equality
	// columns.
	Keys [][]byte
	// Files are the data files holding keys, with the positions found.
	Files []FileHits
	// Scanned are the data files read.
	Scanned []string
}

// keySchema is the row schema of key values of the equality columns cols of sc.
func keySchema(sc *ibg.Schema, cols []string) (*row.Schema, error) {
	types := make([]ibg.Type, len(cols))
	for i, c := range cols {
		f, ok := sc.FindFieldByName(c)
		if !ok {
			return nil, fmt.Errorf("no equality column %q in the table schema", c)
		}
		types[i] = f.Type
	}
	return row.NewSchema(append([]string(nil), cols...), types), nil
}

// EncodeKeys encodes keys (values of the equality columns cols of table schema sc)
// as rows (row.Encode).
func EncodeKeys(sc *ibg.Schema, cols []string, keys [][]any) ([][]byte, error) {
	ks, err := keySchema(sc, cols)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if out[i], err = row.Encode(row.Of(ks, k)); err != nil {
			return nil, fmt.Errorf("encode key %v: %w", k, err)
		}
	}
	return out, nil
}

// DecodeKeys decodes keys encoded by EncodeKeys.
func DecodeKeys(enc [][]byte) ([][]any, error) {
	out := make([][]any, len(enc))
	for i, b := range enc {
		r, err := row.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("decode key: %w", err)
		}
		out[i] = r.Values()
	}
	return out, nil
}

// Encode returns r in its crossing form; sc is the table schema the keys belong to
// and cols the equality columns.
func (r *Resolution) Encode(sc *ibg.Schema, cols []string) (EncodedResolution, error) {
	keys, err := EncodeKeys(sc, cols, r.Keys)
	if err != nil {
		return EncodedResolution{}, fmt.Errorf("iceberg: encode resolution: %w", err)
	}
	return EncodedResolution{SnapshotID: r.SnapshotID, Keys: keys, Files: r.Files, Scanned: r.Scanned}, nil
}

// Decode returns the Resolution of e. Its planned tasks are not carried: the first
// Resolver.Refresh plans again (without reading files that did not change).
func (e EncodedResolution) Decode() (*Resolution, error) {
	keys, err := DecodeKeys(e.Keys)
	if err != nil {
		return nil, fmt.Errorf("iceberg: decode resolution: %w", err)
	}
	return &Resolution{SnapshotID: e.SnapshotID, Keys: keys, Files: e.Files, Scanned: e.Scanned}, nil
}
