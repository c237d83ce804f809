package compat

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Cloud Controller's half of definition updates (docs/CLOUD_CONTROLLER.md), spoken by Ruby as
// CC speaks it: Debian's ruby and ruby-google-protobuf, the committed bindings
// (protocol/pb/*_pb.rb) and a client written as CC's lib/diego/client.rb desire an LRP,
// update it with a definition and a strategy, watch the rollout through the LRP events, hold
// one at a manual canary step and cancel it, roll back, and meet CC's errors
// (ruby/definition_updates.rb says each step). The script raises at the first step that does
// not go as the contract says; its output is the test's log.
func TestCloudControllerDefinitionUpdatesInRuby(t *testing.T) {
	ruby := rubyWithProtobuf(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	guid := "compat-ruby-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	cmd := exec.CommandContext(ctx, ruby, "-I", root, filepath.Join("ruby", "definition_updates.rb"),
		"--bbs", sys.protocolURL, "--api", sys.apiURL, "--process-guid", guid)
	out, err := cmd.CombinedOutput()
	t.Logf("ruby ruby/definition_updates.rb:\n%s", out)
	if err != nil {
		t.Fatalf("the Ruby client's definition updates: %v", err)
	}
	if !strings.Contains(string(out), "definition updates: every step passed") {
		t.Fatal("the script exited 0 without saying every step passed")
	}
}

// rubyWithProtobuf is Debian's ruby with google-protobuf loadable. When either is missing it
// installs Debian's ruby and ruby-google-protobuf with apt-get as root (waiting for another
// session's apt lock), and skips, saying why, where it cannot.
func rubyWithProtobuf(t *testing.T) string {
	t.Helper()
	if ruby, err := loadsProtobuf(); err == nil {
		return ruby
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs Debian's ruby and ruby-google-protobuf (apt-get install ruby ruby-google-protobuf), " +
			"which are missing and cannot be installed here: not root, or no apt-get")
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{
		{"update", "-qq"},
		{"install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", "ruby", "ruby-google-protobuf"},
	} {
		cmd := exec.Command(apt, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("needs Debian's ruby and ruby-google-protobuf, which are missing, and apt-get %s failed: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ruby, err := loadsProtobuf()
	if err != nil {
		t.Fatalf("after installing ruby and ruby-google-protobuf: %v", err)
	}
	return ruby
}

// loadsProtobuf is the path of ruby if it loads google/protobuf.
func loadsProtobuf() (string, error) {
	ruby, err := exec.LookPath("ruby")
	if err != nil {
		return "", err
	}
	if out, err := exec.Command(ruby, "-e", `require "google/protobuf"`).CombinedOutput(); err != nil {
		return "", errors.New(strings.TrimSpace(string(out)))
	}
	return ruby, nil
}
