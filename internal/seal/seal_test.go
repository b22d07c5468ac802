package seal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSealedSecretsOpenOnlyWithTheirKeyAndRow(t *testing.T) {
	k1 := bytes.Repeat([]byte{1}, KeySize)
	k2 := bytes.Repeat([]byte{2}, KeySize)
	s1, _ := New(k1)
	s2, _ := New(k2)
	sealed, err := s1.SealSecrets([]string{"whsec_a", "whsec_b"}, []byte("conn-1"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("whsec_a")) {
		t.Fatal("sealed value contains the plaintext")
	}
	got, err := s1.OpenSecrets(sealed, []byte("conn-1"))
	if err != nil || len(got) != 2 || string(got[0]) != "whsec_a" || string(got[1]) != "whsec_b" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := s2.OpenSecrets(sealed, []byte("conn-1")); err == nil {
		t.Fatal("opened with another key")
	}
	if _, err := s1.OpenSecrets(sealed, []byte("conn-2")); err == nil {
		t.Fatal("opened when moved to another row")
	}
}

func TestLoadOrCreateKeyWritesPrivateFileOnceAndRereadsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "master.key")
	k1, created, err := LoadOrCreateKey("", path)
	if err != nil || !created || len(k1) != KeySize {
		t.Fatalf("first load: %v created=%v", err, created)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, %v", fi.Mode(), err)
	}
	k2, created, err := LoadOrCreateKey("", path)
	if err != nil || created || !bytes.Equal(k1, k2) {
		t.Fatalf("second load differs: %v created=%v", err, created)
	}
	if _, _, err := LoadOrCreateKey("short", path); err == nil {
		t.Fatal("accepted a malformed env key")
	}
}
