package devstack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/sshproxy"
	"go.uber.org/zap"
)

type fakeLRPs []*model.DesiredLRP

func (f fakeLRPs) DesiredLRPs(context.Context, model.DesiredLRPFilter) ([]*model.DesiredLRP, error) {
	return f, nil
}

func lrp(process, log string) *model.DesiredLRP {
	d := &model.DesiredLRP{ProcessGUID: process}
	d.LogGUID = log
	return d
}

// The stand-ins speak the code flow as UAA and Cloud Controller do: a code from the
// authorize endpoint (for the dev user's token), exchanged once by the proxy's client alone
// for a token, which Cloud Controller's ssh_access takes and answers with the process guid
// of the LRP whose log_guid is the app guid.
func TestStandInUAAAndCC(t *testing.T) {
	data := t.TempDir()
	sshDir := filepath.Join(data, "ssh")
	os.MkdirAll(sshDir, 0o700)
	cf, err := startDevCF(sshDir, processByLogGUID(fakeLRPs{lrp("app-b-v2", "app"), lrp("app-a-v1", "app"), lrp("other", "x")}), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer cf.stop()
	for _, f := range []string{uaaClientSecretFile, uaaUserTokenFile} {
		if st, err := os.Stat(filepath.Join(sshDir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st, err)
		}
	}
	code, err := SSHCode(context.Background(), data)
	if err != nil || len(code) != 10 {
		t.Fatalf("SSHCode = %q, %v", code, err)
	}
	auth := cf.proxyAuth()
	exchange := func(secret, code string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, auth.UAATokenURL, strings.NewReader(url.Values{"grant_type": {"authorization_code"}, "code": {code}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(sshproxy.DefaultUAAClientID, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ AccessToken, TokenType, Error string }
		json.NewDecoder(resp.Body).Decode(&struct {
			AccessToken *string `json:"access_token"`
			TokenType   *string `json:"token_type"`
			Error       *string `json:"error"`
		}{&body.AccessToken, &body.TokenType, &body.Error})
		if resp.StatusCode == http.StatusOK && body.TokenType != "bearer" {
			t.Fatalf("token type %q", body.TokenType)
		}
		return resp.StatusCode, body.AccessToken + body.Error
	}
	if status, e := exchange("wrong", code); status != http.StatusUnauthorized || e != "unauthorized" {
		t.Fatalf("a wrong client secret: %d %s", status, e)
	}
	status, token := exchange(auth.ClientSecret, code)
	if status != http.StatusOK || token == "" {
		t.Fatalf("the exchange: %d %q", status, token)
	}
	if status, e := exchange(auth.ClientSecret, code); status != http.StatusBadRequest || e != "invalid_grant" {
		t.Fatalf("the code again: %d %s", status, e)
	}
	access := func(token, app string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, auth.CCURL+"/internal/apps/"+app+"/ssh_access/0", nil)
		if token != "" {
			req.Header.Set("Authorization", "bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			ProcessGUID string `json:"process_guid"`
			ErrorCode   string `json:"error_code"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.ProcessGUID + body.ErrorCode
	}
	for _, tc := range []struct {
		token, app string
		status     int
		want       string
	}{
		{token, "app", http.StatusOK, "app-a-v1"},
		{token, "nope", http.StatusNotFound, "CF-AppNotFound"},
		{"", "app", http.StatusUnauthorized, "CF-InvalidAuthToken"},
		{"forged", "app", http.StatusUnauthorized, "CF-InvalidAuthToken"},
	} {
		if status, got := access(tc.token, tc.app); status != tc.status || got != tc.want {
			t.Errorf("ssh_access %s with %q: %d %q, want %d %q", tc.app, tc.token, status, got, tc.status, tc.want)
		}
	}
	// Codes expire.
	code, _ = SSHCode(context.Background(), data)
	cf.now = func() time.Time { return time.Now().Add(devCodeLifetime) }
	if status, _ := exchange(auth.ClientSecret, code); status != http.StatusBadRequest {
		t.Fatalf("an expired code: %d", status)
	}
	// Without the dev user's token, no code.
	os.WriteFile(filepath.Join(sshDir, uaaUserTokenFile), []byte("someone-else"), 0o600)
	if _, err := SSHCode(context.Background(), data); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a code for another token: %v", err)
	}
}
