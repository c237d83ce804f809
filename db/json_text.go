package db

import (
	"database/sql/driver"
	"fmt"
)

// jsonText is the JSON of a json or jsonb column. It is sent as text: the store's
// connections send parameters in binary format (see withBinaryParameters), in which a raw
// []byte is not what jsonb expects.
type jsonText []byte

// Value sends the JSON as text.
func (j jsonText) Value() (driver.Value, error) {
	if j == nil {
		return nil, nil
	}
	return string(j), nil
}

// Scan reads a json or jsonb column.
func (j *jsonText) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		*j = append((*j)[:0], v...)
	case string:
		*j = jsonText(v)
	case nil:
		*j = nil
	default:
		return fmt.Errorf("cannot read %T as JSON", src)
	}
	return nil
}
