package sshproxy

import (
	"crypto/ed25519"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestParseUser(t *testing.T) {
	for _, tc := range []struct {
		user    string
		guid    string
		index   int32
		wantErr string
	}{
		{"diego:web/0", "web", 0, ""},
		{"diego:my-app_v2/9999", "my-app_v2", 9999, ""},
		{"diego:web/10000", "", 0, "from 0 to 9999"},
		{"diego:web/-1", "", 0, "from 0 to 9999"},
		{"diego:web/+1", "", 0, "from 0 to 9999"},
		{"diego:web/1x", "", 0, "from 0 to 9999"},
		{"diego:web/", "", 0, "from 0 to 9999"},
		{"diego:web", "", 0, "no /<index>"},
		{"diego:/0", "", 0, "process guid must be"},
		{"diego:we b/0", "", 0, "process guid must be"},
		{"xdiego:web/0", "", 0, "not of the form"},
		{"cf:web/0", "", 0, "not of the form"},
		{"root", "", 0, "not of the form"},
		{"diego:web/0/1", "", 0, "from 0 to 9999"},
		{"diego:" + strings.Repeat("a", 256) + "/0", "", 0, "process guid must be"},
	} {
		guid, index, err := ParseUser(tc.user)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseUser(%q) = %v, want an error with %q", tc.user, err, tc.wantErr)
			}
			continue
		}
		if err != nil || guid != tc.guid || index != tc.index {
			t.Errorf("ParseUser(%q) = %q, %d, %v", tc.user, guid, index, err)
		}
	}
}

func TestParseCFUser(t *testing.T) {
	const uuid = "6f1c6e7e-3a53-4c7e-9b8e-2d6f3f0c9a11"
	for _, tc := range []struct {
		user    string
		guid    string
		index   int32
		wantErr string
	}{
		{"cf:" + uuid + "/0", uuid, 0, ""},
		{"cf:demo-app/12", "demo-app", 12, ""},
		{"cf:" + uuid, "", 0, "no /<index> after the app guid"},
		{"cf:" + uuid + "/x", "", 0, "from 0 to 9999"},
		{"cf:../0", "", 0, "the app guid must be"},
		{"cf:a?b/0", "", 0, "the app guid must be"},
		{"cf:a%2f/0", "", 0, "the app guid must be"},
		{"diego:" + uuid + "/0", "", 0, "is not of the form cf:<app_guid>/<index>"},
	} {
		guid, index, err := ParseCFUser(tc.user)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !isFailedLogin(err) {
				t.Errorf("ParseCFUser(%q) = %v, want a failed login with %q", tc.user, err, tc.wantErr)
			}
			continue
		}
		if err != nil || guid != tc.guid || index != tc.index {
			t.Errorf("ParseCFUser(%q) = %q, %d, %v", tc.user, guid, index, err)
		}
	}
}

// FuzzParseUser: any user name is parsed or refused with a Refusal, never a panic, by both
// authenticators' parsers; what parses is exactly <prefix><guid>/<index> again, and the
// guid is safe in a URL path segment (Cloud Controller's) as it is.
func FuzzParseUser(f *testing.F) {
	for _, s := range []string{"diego:web/0", "diego:a/9999", "diego:/", "cf:x/1", "diego:web/00", "diego:é/1",
		"cf:6f1c6e7e-3a53-4c7e-9b8e-2d6f3f0c9a11/0", "cf:a/b/0", "cf:%2e%2e/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, user string) {
		for prefix, parse := range map[string]func(string) (string, int32, error){diegoPrefix: ParseUser, cfPrefix: ParseCFUser} {
			guid, index, err := parse(user)
			if err != nil {
				if _, ok := err.(*Refusal); !ok || !isFailedLogin(err) {
					t.Fatalf("error of type %T (%v)", err, err)
				}
				continue
			}
			if index < 0 || index >= 10000 {
				t.Fatalf("index %d", index)
			}
			rest, ok := strings.CutPrefix(user, prefix+guid+"/")
			if n, err := strconv.Atoi(rest); !ok || err != nil || n != int(index) {
				t.Fatalf("%q parsed as %q, %d", user, guid, index)
			}
			if url.PathEscape(guid) != guid || guid == "." || guid == ".." {
				t.Fatalf("%q: guid %q is not a plain path segment", user, guid)
			}
		}
	})
}

func newKey(t testing.TB) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return signer, string(pem.EncodeToMemory(block))
}

func routeJSON(t testing.TB, r Route) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func colonHex(sum []byte) string {
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(parts, ":")
}

func TestParseRouteAndItsFingerprints(t *testing.T) {
	host, _ := newKey(t)
	other, _ := newKey(t)
	_, pemKey := newKey(t)
	md5sum := md5.Sum(host.PublicKey().Marshal())
	sha1sum := sha1.Sum(host.PublicKey().Marshal())
	sha256fp := Fingerprint(host.PublicKey())
	for _, fp := range []string{colonHex(md5sum[:]), strings.ToUpper(colonHex(md5sum[:])), colonHex(sha1sum[:]),
		sha256fp, sha256fp + "=", "SHA256:" + sha256fp} {
		r, signer, err := ParseRoute(routeJSON(t, Route{ContainerPort: 2222, HostFingerprint: fp, PrivateKey: pemKey}))
		if err != nil || signer == nil || r.ContainerPort != 2222 {
			t.Fatalf("fingerprint %q: %v", fp, err)
		}
		f, _ := parseFingerprint(fp)
		if f.check(host.PublicKey()) != nil || f.check(other.PublicKey()) == nil {
			t.Fatalf("fingerprint %q does not tell the host key from another", fp)
		}
	}
	for _, tc := range []struct {
		raw  string
		want string
	}{
		{`[]`, "not a JSON object"},
		{``, "not a JSON object"},
		{`{"container_port": "2222"}`, "field container_port must be a uint32"},
		{`{"container_port": 0}`, "between 1 and 65535"},
		{`{"container_port": 70000}`, "between 1 and 65535"},
		{`{"container_port": 2222, "private_key": "x"}`, "no host_fingerprint"},
		{`{"container_port": 2222, "host_fingerprint": "aa:bb", "private_key": "x"}`, "is not an MD5"},
		{`{"container_port": 2222, "host_fingerprint": "` + strings.Repeat("zz:", 15) + `zz"}`, "is not an MD5"},
		{`{"container_port": 2222, "host_fingerprint": "` + sha256fp + `", "private_key": "secret-not-a-key"}`, "not a PEM private key"},
		{`{"container_port": 2222, "host_fingerprint": "` + sha256fp + `"}`, "neither a private_key nor"},
		{`{"container_port": 2222`, "malformed JSON"},
	} {
		_, _, err := ParseRoute([]byte(tc.raw))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRoute(%s) = %v, want %q", tc.raw, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-not-a-key") {
			t.Errorf("the error shows the private key: %v", err)
		}
	}
	if _, _, err := ParseRoute(routeJSON(t, Route{ContainerPort: 22, HostFingerprint: sha256fp, User: "u", Password: "p"})); err != nil {
		t.Errorf("a user and password route: %v", err)
	}
}

// FuzzParseRoute: any route value is parsed or refused with a Refusal, never a panic, and
// never with the private key in the message.
func FuzzParseRoute(f *testing.F) {
	f.Add([]byte(`{"container_port":2222,"host_fingerprint":"a4:4c:3b:27:1c:0a:16:26:fa:76:b1:2d:3f:ef:0d:ab","private_key":"-----BEGIN"}`))
	f.Add([]byte(`{"container_port":2222,"host_fingerprint":"SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","user":"u","password":"p"}`))
	f.Add([]byte(`{"container_port":-1}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, _, err := ParseRoute(raw)
		if err != nil {
			if _, ok := err.(*Refusal); !ok {
				t.Fatalf("error of type %T", err)
			}
			if r != nil {
				t.Fatal("a route with an error")
			}
			var route Route
			if json.Unmarshal(raw, &route) == nil && len(route.PrivateKey) > 8 && strings.Contains(err.Error(), route.PrivateKey) {
				t.Fatalf("the error shows the private key: %v", err)
			}
			return
		}
		if r.ContainerPort == 0 || r.ContainerPort > 65535 || r.HostFingerprint == "" {
			t.Fatalf("accepted %+v", r)
		}
	})
}
