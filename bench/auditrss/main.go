// Command auditrss measures what the audit export costs a running server
// (issue 14): it starts a floe binary on a fresh data directory with the
// export of system.audit on or off, drives loadTable from 32 clients for a
// while, and reports the loads per second and the server's peak RSS
// (VmHWM). With the export on, the namespace system is created first with
// a maintenance policy that makes the generic compaction look at
// system.audit every 20 s, so that an old binary (whose export relied on
// it) compacts during the run too; a new binary ignores it (the table turns
// the generic compaction off and the export compacts incrementally).
//
//	go run ./bench/auditrss -bin bin/floe -export 10s -duration 60s
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	bin := flag.String("bin", "bin/floe", "the floe binary")
	export := flag.Duration("export", 10*time.Second, "audit_export_interval (0: off)")
	dur := flag.Duration("duration", 60*time.Second, "how long to load")
	conns := flag.Int("c", 32, "concurrent clients")
	flag.Parse()
	if err := run(*bin, *export, *dur, *conns); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func run(bin string, export, dur time.Duration, conns int) error {
	dir, err := os.MkdirTemp("", "auditrss-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port := freePort()
	cmd := exec.Command(bin, "serve", "--data-dir", filepath.Join(dir, "data"), "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--log-level", "warn", "--s3-listen", fmt.Sprintf("127.0.0.1:%d", freePort()), "--sql-listen", "off", "--admin-listen", "off")
	cmd.Env = append(os.Environ(), "FLOE_BOOTSTRAP_CREDENTIAL=bench:bench-secret",
		"FLOE_AUDIT_EXPORT_INTERVAL="+export.String(), "FLOE_MAINTENANCE_INTERVAL=5s")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Floe is running") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		return fmt.Errorf("the server did not start")
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns * 2
	hc := &http.Client{Transport: tr}
	resp, err := hc.PostForm(base+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"},
		"client_id": {"bench"}, "client_secret": {"bench-secret"}})
	if err != nil {
		return err
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil {
		return err
	}
	post := func(path, body string) error {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		req.Header.Set("Content-Type", "application/json")
		r, err := hc.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			return fmt.Errorf("POST %s: %d %s", path, r.StatusCode, b)
		}
		return nil
	}
	if err := post("/v1/floe/namespaces", `{"namespace":["system"],"properties":{"floe.maintenance.compaction.interval":"20s"}}`); err != nil {
		return err
	}
	if err := post("/v1/floe/namespaces", `{"namespace":["load"]}`); err != nil {
		return err
	}
	for i := range 8 {
		if err := post("/v1/floe/namespaces/load/tables", fmt.Sprintf(`{"name":"t%d","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}}`, i)); err != nil {
			return err
		}
	}
	var loads, failures atomic.Int64
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range conns {
		wg.Go(func() {
			for i := w; time.Now().Before(stop); i++ {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/floe/namespaces/load/tables/t%d", base, i%8), nil)
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
				r, err := hc.Do(req)
				if err != nil {
					failures.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, r.Body)
				r.Body.Close()
				if r.StatusCode == 200 {
					loads.Add(1)
				} else {
					failures.Add(1)
				}
			}
		})
	}
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	// Let a last export and compaction run, then read the peak.
	if export > 0 {
		time.Sleep(export + 5*time.Second)
	}
	hwm, rss := status(cmd.Process.Pid)
	exported := ""
	if export > 0 {
		exported = lastSeq(hc, base, tok.AccessToken)
	}
	fmt.Printf("bin=%s export=%s loads=%d failures=%d loads/s=%.0f peak_rss_mib=%.0f rss_mib=%.0f exported_to_seq=%s\n", bin, export,
		loads.Load(), failures.Load(), float64(loads.Load())/elapsed.Seconds(), hwm/1024, rss/1024, exported)
	return nil
}

// lastSeq returns the watermark of system.audit's current snapshot, or why not.
func lastSeq(hc *http.Client, base, tok string) string {
	req, _ := http.NewRequest("GET", base+"/v1/floe/namespaces/system/tables/audit", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	r, err := hc.Do(req)
	if err != nil {
		return err.Error()
	}
	defer r.Body.Close()
	var lt struct {
		Metadata struct {
			Current   *int64 `json:"current-snapshot-id"`
			Snapshots []struct {
				ID      int64             `json:"snapshot-id"`
				Summary map[string]string `json:"summary"`
			} `json:"snapshots"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&lt); err != nil || lt.Metadata.Current == nil {
		return fmt.Sprintf("none(%d)", r.StatusCode)
	}
	best := ""
	for _, s := range lt.Metadata.Snapshots {
		if v, ok := s.Summary["floe.audit.last-seq"]; ok {
			best = v // snapshots are in commit order
		}
	}
	return best
}

// status returns VmHWM and VmRSS of pid in KiB.
func status(pid int) (hwm, rss float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) >= 2 && (f[0] == "VmHWM:" || f[0] == "VmRSS:") {
			v, _ := strconv.ParseFloat(f[1], 64)
			if f[0] == "VmHWM:" {
				hwm = v
			} else {
				rss = v
			}
		}
	}
	return hwm, rss
}
