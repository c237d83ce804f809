//go:build ignore

// Command httpserver is the test instance of the process backend's tests: it listens on
// 127.0.0.1:$PORT, answers 200 on /health and its pid on /pid.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	http.HandleFunc("/pid", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, os.Getpid()) })
	fmt.Println("listening on", os.Getenv("PORT"))
	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil))
}
