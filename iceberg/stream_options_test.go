package iceberg

import (
	"reflect"
	"testing"
	"time"
)

// TestStreamingOptionsSetTheirKey checks that each continuous-read option sets its key
// and that the result survives the map round trip.
func TestStreamingOptionsSetTheirKey(t *testing.T) {
	ts := time.UnixMilli(1714557600123)
	on := WithStreaming(true)
	reads := []struct {
		name string
		opts []ReadOption
		key  string
		want any
	}{
		{"WithStreaming", []ReadOption{on}, KeyStreaming, true},
		{"WithPollInterval rounds up", []ReadOption{on, WithPollInterval(1500 * time.Millisecond)}, KeyPollIntervalSeconds, 2},
		{"WithReadStartingStrategy", []ReadOption{on, WithReadStartingStrategy(StartLatest)}, KeyStartingStrategy, "latest"},
		{"WithReadFromSnapshot", []ReadOption{on, WithReadFromSnapshot(7)}, KeyFromSnapshot, int64(7)},
		{"WithReadToSnapshot", []ReadOption{on, WithReadToSnapshot(8)}, KeyToSnapshot, int64(8)},
		{"WithReadFromTimestamp", []ReadOption{on, WithReadFromTimestamp(ts)}, KeyFromTimestamp, int64(1714557600123)},
		{"WithReadToTimestamp", []ReadOption{on, WithReadToTimestamp(ts)}, KeyToTimestamp, int64(1714557600123)},
	}
	for _, tt := range reads {
		t.Run(tt.name, func(t *testing.T) {
			c := validRead().With(tt.opts...)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			m := c.Map()
			if !reflect.DeepEqual(m[tt.key], tt.want) {
				t.Errorf("Map()[%q] = %#v, want %#v", tt.key, m[tt.key], tt.want)
			}
			back, err := ParseReadConfig(m)
			if err != nil || !reflect.DeepEqual(back, c) {
				t.Errorf("ParseReadConfig(Map()) = %+v, %v; want %+v", back, err, c)
			}
		})
	}
	changes := []struct {
		name string
		opts []ChangesOption
		key  string
		want any
	}{
		{"WithChangesStreaming", []ChangesOption{WithChangesStreaming(true)}, KeyStreaming, true},
		{"WithChangesPollInterval", []ChangesOption{WithChangesStreaming(true), WithChangesPollInterval(time.Minute)}, KeyPollIntervalSeconds, 60},
	}
	for _, tt := range changes {
		t.Run(tt.name, func(t *testing.T) {
			c := ChangesConfig{Table: "t", CatalogName: "c", CatalogProperties: map[string]string{"type": "sql"}}.With(tt.opts...)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			m := c.Map()
			if !reflect.DeepEqual(m[tt.key], tt.want) {
				t.Errorf("Map()[%q] = %#v, want %#v", tt.key, m[tt.key], tt.want)
			}
			back, err := ParseChangesConfig(m)
			if err != nil || !reflect.DeepEqual(back, c) {
				t.Errorf("ParseChangesConfig(Map()) = %+v, %v; want %+v", back, err, c)
			}
		})
	}
	if err := validRead().With(WithPollInterval(-time.Second), on).Validate(); err == nil {
		t.Error("a negative poll interval is valid")
	}
}
