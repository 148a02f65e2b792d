package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// object is a JSON object that keeps its members' order, so settings
// a person wrote come back as they wrote them, save what cowfs changed.
type object []member

type member struct {
	Key   string
	Value json.RawMessage
}

func (o *object) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("not a JSON object")
	}
	*o = (*o)[:0]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.set(key, v)
	}
	_, err = dec.Token()
	return err
}

func (o object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(m.Value)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func (o object) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// set replaces key's value where it stands, or appends it.
func (o *object) set(key string, v json.RawMessage) {
	for i, m := range *o {
		if m.Key == key {
			(*o)[i].Value = v
			return
		}
	}
	*o = append(*o, member{key, v})
}

func (o *object) del(key string) {
	for i, m := range *o {
		if m.Key == key {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

// setValue marshals v and sets it.
func (o *object) setValue(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	o.set(key, b)
	return nil
}
