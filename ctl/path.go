package ctl

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Path is a workspace path on the wire. Linux names are bytes, not
// text: a name that is not valid UTF-8 must still come back exactly
// (to `cat --at` it, to recognise it in a report). encoding/json would
// replace each invalid byte with U+FFFD, so Path encodes each byte that
// is not part of valid UTF-8 as the lone surrogate escape \udcXX, XX
// being the byte (0x80–0xff) — the "surrogateescape" convention of
// Python's os.fsdecode, which JavaScript's JSON.parse keeps as a lone
// surrogate code unit. Valid UTF-8 is encoded as usual. Decoding turns
// \udc80–\udcff back into the bytes; a client that only displays paths
// can ignore all this.
type Path string

// MarshalJSON encodes p, escaping bytes that are not valid UTF-8.
func (p Path) MarshalJSON() ([]byte, error) {
	if plain(string(p)) { // most paths: a rollback's report of 25,000 is encoded three times
		b := make([]byte, 0, len(p)+2)
		return append(append(append(b, '"'), p...), '"'), nil
	}
	if utf8.ValidString(string(p)) {
		return json.Marshal(string(p))
	}
	var b strings.Builder
	b.WriteByte('"')
	s := string(p)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\udc`)
			b.WriteString(strconv.FormatUint(uint64(s[0]), 16))
			s = s[1:]
			continue
		}
		// One valid rune, escaped as encoding/json would.
		enc, _ := json.Marshal(s[:size])
		b.Write(enc[1 : len(enc)-1])
		s = s[size:]
	}
	b.WriteByte('"')
	return []byte(b.String()), nil
}

// plain reports whether s is printable ASCII that encoding/json writes
// as it is: no quote, backslash or control character, and none of the
// <, > and & it escapes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

var errBadPath = errors.New("ctl: bad JSON string for a path")

// UnmarshalJSON decodes a string, turning \udc80–\udcff escapes back
// into the bytes they stand for.
func (p *Path) UnmarshalJSON(data []byte) error {
	if len(data) >= 2 && data[0] == '"' && data[len(data)-1] == '"' && plain(string(data[1:len(data)-1])) {
		*p = Path(data[1 : len(data)-1])
		return nil
	}
	if !strings.Contains(string(data), `\udc`) && !strings.Contains(string(data), `\uDC`) {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*p = Path(s)
		return nil
	}
	s, err := unquote(data)
	if err != nil {
		return err
	}
	*p = Path(s)
	return nil
}

// unquote decodes a JSON string literal, keeping lone surrogates
// \udc80–\udcff as the bytes 0x80–0xff.
func unquote(data []byte) (string, error) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return "", errBadPath
	}
	in := data[1 : len(data)-1]
	var out []byte
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(in) {
			return "", errBadPath
		}
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(in[i+1:])
			if !ok {
				return "", errBadPath
			}
			i += 4
			switch {
			case r >= 0xdc80 && r <= 0xdcff:
				out = append(out, byte(r-0xdc00))
			case utf16.IsSurrogate(r):
				// A surrogate pair: \uD8xx\uDCxx.
				if i+6 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
					if r2, ok := hex4(in[i+3:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							i += 6
							continue
						}
					}
				}
				out = utf8.AppendRune(out, utf8.RuneError)
			default:
				out = utf8.AppendRune(out, r)
			}
		default:
			return "", errBadPath
		}
	}
	return string(out), nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}
