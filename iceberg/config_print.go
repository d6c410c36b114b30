package iceberg

import (
	"encoding/json"
	"fmt"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Printing. The configs print and marshal to JSON with the secrets of
// CatalogProperties and ConfigProperties redacted (see IsSecretKey): fmt with any
// verb, of a value or a pointer, String, GoString and json.Marshal. Map is not
// redacted: it is the exact inverse of the Parse functions.

func (c ReadConfig) redacted() any { return config.RedactedPlain(c) }

func (c WriteConfig) redacted() any { return config.RedactedPlain(c) }

func (c ChangesConfig) redacted() any { return config.RedactedPlain(c) }

func (c MaintainConfig) redacted() any { return config.RedactedPlain(c) }

// String prints c with catalog secrets redacted.
func (c ReadConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString prints c (the %#v verb) with catalog secrets redacted.
func (c ReadConfig) GoString() string { return config.GoString(c.redacted(), "ReadConfig") }

// Format prints c for every fmt verb with catalog secrets redacted.
func (c ReadConfig) Format(f fmt.State, verb rune) { config.Format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c with catalog secrets redacted (for logs: use Map for a round
// trip).
func (c ReadConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String prints c with catalog secrets redacted.
func (c WriteConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString prints c (the %#v verb) with catalog secrets redacted.
func (c WriteConfig) GoString() string { return config.GoString(c.redacted(), "WriteConfig") }

// Format prints c for every fmt verb with catalog secrets redacted.
func (c WriteConfig) Format(f fmt.State, verb rune) { config.Format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c with catalog secrets redacted (for logs: use Map for a round
// trip).
func (c WriteConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String prints c with catalog secrets redacted.
func (c ChangesConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString prints c (the %#v verb) with catalog secrets redacted.
func (c ChangesConfig) GoString() string { return config.GoString(c.redacted(), "ChangesConfig") }

// Format prints c for every fmt verb with catalog secrets redacted.
func (c ChangesConfig) Format(f fmt.State, verb rune) {
	config.Format(f, verb, c.redacted(), c.GoString)
}

// MarshalJSON encodes c with catalog secrets redacted (for logs: use Map for a round
// trip).
func (c ChangesConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String prints c with catalog secrets redacted.
func (c MaintainConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString prints c (the %#v verb) with catalog secrets redacted.
func (c MaintainConfig) GoString() string { return config.GoString(c.redacted(), "MaintainConfig") }

// Format prints c for every fmt verb with catalog secrets redacted.
func (c MaintainConfig) Format(f fmt.State, verb rune) {
	config.Format(f, verb, c.redacted(), c.GoString)
}

// MarshalJSON encodes c with catalog secrets redacted (for logs: use Map for a round
// trip).
func (c MaintainConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }
