package journal

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"os"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func sha(b []byte) [32]byte { return sha256.Sum256(b) }

func sampleRecord() *Record {
	return &Record{
		Seq: 42, Turn: 3, Group: 5, Step: "call_7", Time: time.Unix(1700000000, 123456789),
		Kind: KindRename, Cause: CauseWrite, Type: 0o100000, Ino: 123456, Ino2: 654321,
		Path: "src/main.go", Path2: "src/main.go.bak", Aside: "41", Flags: 1,
		Caller: Caller{Pid: 4242, Uid: 1000, Gid: 1000, Comm: "sed", Cmdline: "sed -i s/a/b/ src/main.go"}, NotAgent: true,
		Attr: Attr{Mode: 0o100644, Uid: 1000, Gid: 1000, Size: 1 << 33, Nlink: 2, Atime: -5, Mtime: 1700000000123456789},
		Off:  4096, Len: 8192 + 1<<30,
		Chunks:       []Chunk{{Hash: sha([]byte("a")), Size: 4096}, {Hash: sha([]byte("b")), Size: 4096}},
		Holes:        []Hole{{Off: 4096 + 4096, Len: 1 << 30}},
		XattrName:    "user.k",
		XattrValue:   []byte{0, 1, 2},
		XattrExisted: true,
		Stored:       77,
		Detail:       []byte(`{"k":1}`),
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := sampleRecord()
	got, err := decodeRecord(r.Seq, encodeRecord(nil, r))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Time.Equal(r.Time) {
		t.Fatalf("time %v, want %v", got.Time, r.Time)
	}
	got.Time = r.Time
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
	}
}

// The encoding is the on-disk format: a change to it must be deliberate
// (bump FormatVersion, update docs/journal-format.md, add a golden file
// for the new record version, go test -update).
func TestRecordGolden(t *testing.T) {
	b := encodeRecord(nil, sampleRecord())
	const golden = "testdata/record-v4.bin"
	if *update {
		os.WriteFile(golden, b, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("record encoding changed:\n got %x\nwant %x", b, want)
	}
}

// Records of version 3, which had no command line, still decode: the
// changes of a journal written before command lines were kept name their
// process by its comm alone.
func TestRecordV3Decodes(t *testing.T) {
	b, err := os.ReadFile("testdata/record-v3.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(42, b)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleRecord()
	want.Caller.Cmdline = ""
	got.Time = want.Time
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 3:\n got %+v\nwant %+v", got, want)
	}
}

// Records of version 2, which had no flags, still decode: a journal
// written before changes were told apart from the agent's is read as
// it is, every change in a turn the turn's.
func TestRecordV2Decodes(t *testing.T) {
	b, err := os.ReadFile("testdata/record-v2.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(42, b)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleRecord()
	want.NotAgent, want.Caller.Cmdline = false, ""
	got.Time = want.Time
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 2:\n got %+v\nwant %+v", got, want)
	}
}

// A record with a flag this version does not know is refused, not read
// as if the flag were not there.
func TestRecordUnknownFlag(t *testing.T) {
	r := sampleRecord()
	b := encodeRecord(nil, r)
	// The flags byte, before the command line (a one-byte length here).
	b[len(b)-len(r.Caller.Cmdline)-2] |= 1 << 7
	if _, err := decodeRecord(42, b); err == nil {
		t.Fatal("a record with an unknown flag decoded")
	}
}

// Records of version 1, which had no holes, still decode: a journal
// written before holes were kept is read as it is.
func TestRecordV1Decodes(t *testing.T) {
	b, err := os.ReadFile("testdata/record-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(42, b)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleRecord()
	want.Len, want.Holes, want.NotAgent, want.Caller.Cmdline = 8192, nil, false, ""
	got.Time = want.Time
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 1:\n got %+v\nwant %+v", got, want)
	}
}

// Holes that leave their record's range, overlap or are empty do not
// decode.
func TestRecordBadHoles(t *testing.T) {
	for _, holes := range [][]Hole{
		{{Off: 0, Len: 10}},                                // before Off
		{{Off: 4096, Len: 8193 + 1<<30}},                   // past the end
		{{Off: 8192, Len: 100}, {Off: 8192 + 50, Len: 10}}, // overlapping
		{{Off: 8192, Len: 0}},                              // empty
	} {
		r := sampleRecord()
		r.Holes = holes
		if _, err := decodeRecord(1, encodeRecord(nil, r)); err == nil {
			t.Errorf("holes %v decoded", holes)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(nil, sampleRecord()))
	f.Add(encodeRecord(nil, &Record{}))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(1, b)
		if err != nil {
			return
		}
		// Whatever decodes survives a round trip unchanged.
		again, err := decodeRecord(1, encodeRecord(nil, r))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip changed the record:\n got %+v\nwant %+v", again, r)
		}
	})
}
