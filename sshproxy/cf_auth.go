package sshproxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// DefaultUAAClientID is the UAA client Cloud Foundry registers for the ssh proxy: `cf
// ssh-code` asks UAA for a code for it, and only it may exchange the code.
const DefaultUAAClientID = "ssh-proxy"

// CFAuth is the cf authenticator's configuration (Diego's ssh-proxy's cf authenticator): a
// user cf:<app_guid>/<index> logs in with a one-time code UAA issued to ClientID; the proxy
// exchanges it for a token and asks Cloud Controller whether that token may ssh into the
// app, which answers with the app's process guid.
type CFAuth struct {
	// UAATokenURL is UAA's token endpoint, e.g. https://uaa.example.com/oauth/token.
	UAATokenURL string
	// ClientID and ClientSecret authenticate the proxy to UAA (HTTP basic auth).
	ClientID, ClientSecret string
	// CCURL is Cloud Controller's internal API: it serves /internal/apps/<guid>/ssh_access/<index>.
	CCURL string
	// HTTP makes both calls; it carries the CA that UAA's and Cloud Controller's
	// certificates chain to (nil: http.DefaultClient).
	HTTP *http.Client
}

// cfAuthenticator logs users in with UAA and Cloud Controller.
type cfAuthenticator struct{ cfg CFAuth }

func newCFAuthenticator(cfg CFAuth) (*cfAuthenticator, error) {
	for name, u := range map[string]string{"UAA token URL": cfg.UAATokenURL, "Cloud Controller URL": cfg.CCURL} {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("ssh proxy: the cf authenticator's %s %q is not an http(s) URL", name, u)
		}
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, fmt.Errorf("ssh proxy: the cf authenticator needs its UAA client id and secret")
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	cfg.CCURL = strings.TrimSuffix(cfg.CCURL, "/")
	return &cfAuthenticator{cfg: cfg}, nil
}

func (a *cfAuthenticator) form() string { return cfPrefix + "<app_guid>/<index>" }

// login parses the user name first (a syntax error burns no code and tells nothing), then
// exchanges the code, and only then asks Cloud Controller about the app: whoever has no
// valid code learns nothing about which apps exist.
func (a *cfAuthenticator) login(ctx context.Context, user string, code []byte) (*login, error) {
	appGUID, index, err := ParseCFUser(user)
	if err != nil {
		return nil, err
	}
	if len(code) == 0 {
		return nil, errBadCode
	}
	token, err := a.exchange(ctx, string(code))
	if err != nil {
		return nil, err
	}
	processGUID, err := a.sshAccess(ctx, appGUID, index, token)
	if err != nil {
		return nil, err
	}
	return &login{ProcessGUID: processGUID, Index: index, App: appGUID, Principal: principal(token)}, nil
}

var errBadCode = refuseLogin("the one-time code is not valid (a code is good once, for a few minutes): get a new one with `cf ssh-code`")

// exchange trades the one-time code for an access token at UAA's token endpoint, as
// Diego's proxy does (grant authorization_code, the proxy's client in basic auth).
func (a *cfAuthenticator) exchange(ctx context.Context, code string) (string, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.UAATokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(a.cfg.ClientID, a.cfg.ClientSecret)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := a.cfg.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("UAA's token endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadRequest: // invalid_grant: unknown, used or expired
		return "", errBadCode
	case http.StatusUnauthorized:
		return "", fmt.Errorf("UAA refused the proxy's client %q (check its secret): %s", a.cfg.ClientID, short(body))
	default:
		return "", fmt.Errorf("UAA's token endpoint answered %d: %s", resp.StatusCode, short(body))
	}
	var t struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if err := json.Unmarshal(body, &t); err != nil || t.AccessToken == "" || !strings.EqualFold(t.TokenType, "bearer") {
		return "", fmt.Errorf("UAA's token endpoint answered no bearer token")
	}
	return t.AccessToken, nil
}

// sshAccess asks Cloud Controller whether the token may ssh into the app's instance and for
// the app's process guid. Its refusals may name the app: the user has logged in with UAA,
// and Cloud Controller itself decides what they may know (404 for an app they cannot see).
func (a *cfAuthenticator) sshAccess(ctx context.Context, appGUID string, index int32, token string) (string, error) {
	u := a.cfg.CCURL + "/internal/apps/" + appGUID + "/ssh_access/" + strconv.Itoa(int(index))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := a.cfg.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("Cloud Controller's ssh_access: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", refuseLogin("Cloud Controller did not accept the login of your one-time code: log in with `cf login` and get a new code")
	case http.StatusForbidden:
		return "", refuseLogin("you may not ssh into app %s (Cloud Controller: not authorized; a space developer may)", quote(appGUID))
	case http.StatusNotFound:
		return "", refuseLogin("app %s not found", quote(appGUID))
	case http.StatusBadRequest: // CC's InvalidRequest: ssh is off for the app, its space or everywhere
		return "", refuseLogin("ssh is not enabled for app %s (or for its space): `cf enable-ssh`", quote(appGUID))
	default:
		return "", fmt.Errorf("Cloud Controller's ssh_access answered %d: %s", resp.StatusCode, short(body))
	}
	var access struct {
		ProcessGUID string `json:"process_guid"`
	}
	if err := json.Unmarshal(body, &access); err != nil || model.ValidateGUID("process_guid", access.ProcessGUID) != nil {
		return "", fmt.Errorf("Cloud Controller's ssh_access answered no valid process guid: %s", short(body))
	}
	return access.ProcessGUID, nil
}

// principal is who the token names (UAA's user_name, else user_id), for the audit line: the
// token's claims read without checking its signature, which Cloud Controller checked.
func principal(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		UserName string `json:"user_name"`
		UserID   string `json:"user_id"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return ""
	}
	if claims.UserName != "" {
		return claims.UserName
	}
	return claims.UserID
}

// short is an answer's body for the log, cut.
func short(body []byte) string {
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return strconv.Quote(s)
}

// loginTimeout bounds a login's calls to UAA and Cloud Controller.
const loginTimeout = 10 * time.Second
