// Command demoapp is a small HTTP app to run as an LRP in demos and end-to-end tests. It
// listens on $PORT and answers GET / with who it is (index, instance guid, process id, and
// $DEMO_VERSION, which a new definition changes), and GET /health with 200. With $DEMO_FAIL
// set it exits at once, saying why: a release that crash-loops. $DEMO_ERROR_RATE (0–1)
// answers that share of GET / with 500 and $DEMO_DELAY_MS delays each: a release that is
// up but worse, for canary analysis to catch.
package main

import (
	"context"
	"encoding/json"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	who := map[string]any{
		"index":         os.Getenv("CF_INSTANCE_INDEX"),
		"instance_guid": os.Getenv("CF_INSTANCE_GUID"),
		"version":       os.Getenv("DEMO_VERSION"),
		"pid":           os.Getpid(),
	}
	if reason := os.Getenv("DEMO_FAIL"); reason != "" {
		// A broken release: the app exits at start, as one missing its configuration does
		// (the demo's crash-looping update).
		log.Fatalf("demoapp %s: cannot start: %s", who["version"], reason)
	}
	if cond := os.Getenv("DEMO_FAIL_WHEN"); cond != "" {
		// An app that breaks under one change of its environment ("STACK=v2"): what a
		// fleet-wide stack update meets in a few apps of thousands.
		if name, value, ok := strings.Cut(cond, "="); ok && os.Getenv(name) == value {
			log.Fatalf("demoapp %s: cannot start with %s", who["version"], cond)
		}
	}
	errorRate, _ := strconv.ParseFloat(os.Getenv("DEMO_ERROR_RATE"), 64)
	delayMS, _ := strconv.Atoi(os.Getenv("DEMO_DELAY_MS"))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(delayMS) * time.Millisecond)
		if rand.Float64() < errorRate {
			http.Error(w, "demoapp: a bad release's error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(who)
	})
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		// Finish in-flight requests, as a well-behaved app does when its cell stops it.
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	log.Printf("demoapp %s listening on :%s", who["version"], port)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
