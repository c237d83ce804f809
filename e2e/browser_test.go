package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/updatable-lrps/bbs/internal/testwait"
)

// browser is a real headless Chromium driving one page, with every uncaught script error
// and console error it reported kept for the test to fail on.
type browser struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// chromium finds Debian's chromium on PATH, installing the package (as root, with apt-get)
// when it is missing. It skips the test, saying why, only where it cannot be installed (or
// under -short, which does not wait minutes for an install).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testing.Short() {
		t.Skip("-short: no chromium on PATH, and installing it takes minutes")
	}
	if os.Geteuid() != 0 {
		t.Skip("no chromium on PATH, and installing it needs root: apt-get install chromium")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("no chromium on PATH and no apt-get to install Debian's chromium package")
	}
	t.Log("chromium is missing: apt-get install chromium (once, a few minutes)")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"update", "-q"}, {"install", "-y", "-q", "chromium"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("chromium could not be installed (apt-get %s: %v):\n%s", strings.Join(args, " "), err, lastLines(string(out), 10))
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("apt-get installed chromium but it is not on PATH: %v", err)
	}
	return p
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// openBrowser starts headless Chromium (closed when the test ends) and opens url in it.
func openBrowser(t *testing.T, url string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.WindowSize(1280, 1000))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			b.fault(fmt.Sprintf("uncaught at %s:%d: %s", d.URL, d.LineNumber+1, msg))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
				}
				b.fault("console.error: " + strings.Join(parts, " "))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s in chromium: %v", url, err)
	}
	t.Cleanup(func() { // before the browser closes
		if t.Failed() {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
			t.Logf("the page when the test failed (screenshot %s):\n%s", b.screenshot("failed"), text)
		}
	})
	return b
}

func (b *browser) fault(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, msg)
}

// checkNoErrors fails the test when the page threw or logged an error.
func (b *browser) checkNoErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) > 0 {
		b.t.Errorf("the page reported errors:\n%s", strings.Join(b.errors, "\n"))
	}
}

// eval is the value of a script expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// text is what a person sees of the element selector names: its rendered text, or "" when
// it is missing or not displayed.
func (b *browser) text(selector string) string {
	b.t.Helper()
	return eval[string](b, `(() => { const e = document.querySelector(`+quoteJS(selector)+`);
		return e && e.checkVisibility() ? e.innerText : ""; })()`)
}

// count is how many displayed elements selector matches.
func (b *browser) count(selector string) int {
	b.t.Helper()
	return eval[int](b, `[...document.querySelectorAll(`+quoteJS(selector)+`)].filter((e) => e.checkVisibility()).length`)
}

// waitText waits until the text of selector contains want, and returns it.
func (b *browser) waitText(selector, want string, within time.Duration) string {
	b.t.Helper()
	var got string
	testwait.Until(b.t, within, 200*time.Millisecond, "the page to show "+want+" in "+selector, func() bool {
		got = b.text(selector)
		return strings.Contains(got, want)
	})
	return got
}

// screenshot saves the whole page as name.png in the test's artifact directory (kept with
// go test -artifacts) and returns its path.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(b.t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// quoteJS is s as a JavaScript string literal.
func quoteJS(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
