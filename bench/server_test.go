package bench_test

// BenchmarkServerMemcached (issue 12 acceptance): a real multi-threaded server, Debian's
// memcached (4 worker threads plus its background threads), under a bounded loopback load
// for 60 s, recorded with function_graph on every function and --no-loss, next to uftrace on
// the same program and the same load.
//
// memcached is fetched with `apt-get source memcached` (testenv.DebianSource; needs
// libevent-dev) and built three times: plain `gcc -O2 -g` (baseline), through ftcc
// (`./configure CC="ftcc gcc"`: -pg -mfentry, recordmcount, libftrt.a, ftlink) and with
// `gcc -O2 -g -pg` for uftrace. Each round runs, alternating, the same load against:
//
//	plain   memcached (untraced)
//	ftkit   ftrace record -t function_graph --no-loss -o T -- memcached
//	uftrace uftrace record -d D memcached (default options: every function of the -pg
//	        build, plus library calls through the PLT)
//	uftrace-nolib  uftrace record --no-libcall: the program's own functions only, as ftkit
//
// (the order is reversed in odd rounds).
// The load is deterministic and bounded: FTKIT_SRV_CONNS connections (default 8) send
// RATE x SECONDS requests in all (90% get, 10% set of 10,000 keys with 200-byte values,
// each connection's sequence fixed by its index), one outstanding request per connection,
// request i of connection c sent no earlier than start + (i*conns+c)/rate; every reply is
// checked. Before the load every key is set once (not counted).
//
// Measured per run: the CPU time (user+sys, /proc/PID/stat) over the load of the server
// process (all its threads, the ftkit writer included) and of the recorder process
// (`ftrace record`, `uftrace record`), the CPU time of the whole run (wait4 rusage of the
// process started: server and recorder, start-up and final flush included), the load's wall
// time; after the round, trace size, events and lost events (ftkit: `ftrace info` and the
// counting reader of tracescan_test.go, lost must be 0; uftrace: records = 16-byte records
// in the per-thread .dat files), and `ftrace report` / `uftrace report` wall time and max RSS
// (/usr/bin/time).
//
//	make tools runtime && FTKIT_BUILD=$PWD/build go test ./bench -run '^$' -bench ServerMemcached -benchtime 1x -v -timeout 2h
//
// FTKIT_SRV_S: seconds of load (default 60); FTKIT_SRV_RATE: requests per second (default
// 5000); FTKIT_SRV_CONNS (8); FTKIT_SRV_THREADS: memcached -t (4); FTKIT_SRV_ROUNDS (1).
// A short run: FTKIT_SRV_S=5. Benchmarks do not run in plain `go test ./bench`.

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

const (
	srvKeys   = 10000
	srvValLen = 200
)

// srvBuild builds memcached in a copy of src with CC and CFLAGS and returns the binary.
func srvBuild(b *testing.B, src, dir, cc, cflags string, env []string) string {
	b.Helper()
	testenv.CopyTree(b, src, dir)
	for _, step := range [][]string{
		{"sh", "-c", "./configure -q CC='" + cc + "' CFLAGS='" + cflags + "'"},
		{"make", "-j2", "memcached"},
	} {
		cmd := exec.Command(step[0], step[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("memcached build (CC=%s): %s: %v\n%s", cc, strings.Join(step, " "), err, tail(string(out), 3000))
		}
	}
	return filepath.Join(dir, "memcached")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// procCPU is the user+sys time of process pid (all its threads), from /proc/PID/stat.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64) // field 14 (utime), counted from field 3 (state)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / 100 // USER_HZ
}

func srvKey(k int) string { return fmt.Sprintf("key:%05d", k) }

func srvValue(k int) []byte {
	v := make([]byte, srvValLen)
	for i := range v {
		v[i] = 'a' + byte((k*7+i)%26)
	}
	return v
}

// srvConn is one client connection of the text protocol.
type srvConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func srvDial(addr string) (*srvConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &srvConn{c, bufio.NewReader(c), bufio.NewWriter(c)}, nil
}

func (s *srvConn) set(k int) error {
	v := srvValue(k)
	fmt.Fprintf(s.w, "set %s 0 0 %d\r\n%s\r\n", srvKey(k), len(v), v)
	if err := s.w.Flush(); err != nil {
		return err
	}
	l, err := s.r.ReadString('\n')
	if err != nil {
		return err
	}
	if l != "STORED\r\n" {
		return fmt.Errorf("set %s: %q", srvKey(k), l)
	}
	return nil
}

func (s *srvConn) get(k int) error {
	fmt.Fprintf(s.w, "get %s\r\n", srvKey(k))
	if err := s.w.Flush(); err != nil {
		return err
	}
	l, err := s.r.ReadString('\n')
	if err != nil {
		return err
	}
	want := fmt.Sprintf("VALUE %s 0 %d\r\n", srvKey(k), srvValLen)
	if l != want {
		return fmt.Errorf("get %s: %q, want %q", srvKey(k), l, want)
	}
	buf := make([]byte, srvValLen+2+5)
	if _, err := ioReadFull(s.r, buf); err != nil {
		return err
	}
	if !bytes.Equal(buf[:srvValLen], srvValue(k)) || string(buf[srvValLen:]) != "\r\nEND\r\n" {
		return fmt.Errorf("get %s: wrong value", srvKey(k))
	}
	return nil
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// srvLoad sets every key once, then sends total requests over conns connections paced at
// rate per second; it returns the wall time of the paced part.
func srvLoad(addr string, conns, total, rate int) (time.Duration, error) {
	c, err := srvDial(addr)
	if err != nil {
		return 0, err
	}
	for k := 0; k < srvKeys; k++ {
		if err := c.set(k); err != nil {
			return 0, err
		}
	}
	c.c.Close()
	cs := make([]*srvConn, conns)
	for i := range cs {
		if cs[i], err = srvDial(addr); err != nil {
			return 0, err
		}
		defer cs[i].c.Close()
	}
	errs := make([]error, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for ci := range cs {
		wg.Add(1)
		go func(ci int) {
			defer wg.Done()
			s := cs[ci]
			x := uint64(ci)*0x9e3779b97f4a7c15 + 1
			for i := ci; i < total; i += conns {
				if d := time.Until(start.Add(time.Duration(float64(i) / float64(rate) * 1e9))); d > 0 {
					time.Sleep(d)
				}
				x ^= x << 13 // xorshift64: each connection's sequence is fixed
				x ^= x >> 7
				x ^= x << 17
				k := int(x>>8) % srvKeys
				var err error
				if x%10 == 0 {
					err = s.set(k)
				} else {
					err = s.get(k)
				}
				if err != nil {
					errs[ci] = err
					return
				}
			}
		}(ci)
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return wall, err
		}
	}
	return wall, nil
}

// srvRun is one run of the server under the load.
type srvRun struct {
	wall                time.Duration // the paced load
	serverCPU, recCPU   time.Duration // over the load: the server process, the recorder process
	totalCPU, totalWall time.Duration // the whole run (wait4 of the process started)
	maxRSS              int64         // KB: the largest of the process started and its children
	recOut              string        // the recorder's output
}

// srvServe starts argv (which runs memcached, wrapped or not, with -P pidfile), applies the
// load, stops memcached with SIGTERM and waits.
func srvServe(b *testing.B, dir string, argv []string, mc []string, conns, total, rate int) srvRun {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	pidfile := filepath.Join(dir, "mc.pid")
	os.Remove(pidfile)
	args := append(append([]string{}, argv...), mc...)
	args = append(args, "-u", "root", "-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-P", pidfile)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	pid := 0
	for deadline := time.Now().Add(30 * time.Second); ; {
		if p, err := os.ReadFile(pidfile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(p)))
		}
		if pid > 0 {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatalf("%s: not serving after 30 s\n%s", strings.Join(args, " "), out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var r srvRun
	s0, r0 := procCPU(pid), procCPU(cmd.Process.Pid)
	wall, lerr := srvLoad(addr, conns, total, rate)
	s1, r1 := procCPU(pid), procCPU(cmd.Process.Pid)
	r.wall = wall
	r.serverCPU = s1 - s0
	if cmd.Process.Pid != pid {
		r.recCPU = r1 - r0
	}
	syscall.Kill(pid, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		b.Fatalf("%s: still running 5 min after SIGTERM\n%s", strings.Join(args, " "), out.String())
	}
	r.totalWall = time.Since(start)
	if lerr != nil {
		b.Fatalf("%s: load: %v\n%s", strings.Join(args, " "), lerr, tail(out.String(), 3000))
	}
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, tail(out.String(), 3000))
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r.totalCPU = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	r.maxRSS = ru.Maxrss
	r.recOut = out.String()
	return r
}

// dirSize is the bytes of the regular files under dir and the bytes of its *.dat files.
func dirSize(dir string) (all, dat int64) {
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			all += fi.Size()
			if strings.HasSuffix(p, ".dat") {
				dat += fi.Size()
			}
		}
		return nil
	})
	return all, dat
}

// timed runs a command with its output discarded under /usr/bin/time and returns
// "ELAPSED s MAXRSS KB".
func timed(b *testing.B, name string, args ...string) string {
	b.Helper()
	tf := filepath.Join(b.TempDir(), "time")
	cmd := exec.Command("/usr/bin/time", append([]string{"-o", tf, "-f", "%e s %M KB", name}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	t, _ := os.ReadFile(tf)
	return strings.TrimSpace(string(t))
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func BenchmarkServerMemcached(b *testing.B) {
	testenv.Need(b, "gcc", "make", "uftrace", "/usr/bin/time")
	bd := testenv.BuildDir()
	ftcc := filepath.Join(bd, "bin", "ftcc")
	if _, err := os.Stat(ftcc); bd == "" || err != nil {
		b.Skip("needs FTKIT_BUILD=<dir> with bin/ftcc (make tools runtime)")
	}
	if _, err := os.Stat("/usr/include/event2/event.h"); err != nil {
		b.Skip("needs libevent-dev (memcached's only build dependency)")
	}
	ftrace := testenv.Tool(b, "ftrace")
	secs := envInt("FTKIT_SRV_S", 60)
	rate := envInt("FTKIT_SRV_RATE", 5000)
	conns := envInt("FTKIT_SRV_CONNS", 8)
	threads := envInt("FTKIT_SRV_THREADS", 4)
	rounds := envInt("FTKIT_SRV_ROUNDS", 1)
	total := secs * rate

	src := testenv.DebianSource(b, "memcached")
	work := b.TempDir()
	t0 := time.Now()
	bins := map[string]string{
		"plain":   srvBuild(b, src, filepath.Join(work, "plain"), "gcc", "-O2 -g", nil),
		"ftkit":   srvBuild(b, src, filepath.Join(work, "ftkit"), ftcc+" gcc", "-O2 -g", []string{"FTCC_PREFIX=" + bd}),
		"uftrace": srvBuild(b, src, filepath.Join(work, "uftrace"), "gcc", "-O2 -g -pg", nil),
	}
	b.Logf("memcached (%s) built three ways in %v", filepath.Base(src), time.Since(t0).Round(time.Second))
	mc := []string{"-t", strconv.Itoa(threads), "-m", "256"}
	b.Logf("load: %d requests over %d connections at %d/s (%d s), memcached -t %d; load average %s",
		total, conns, rate, secs, threads, loadAvg())

	b.ResetTimer()
	for round := 0; round < rounds; round++ {
		runs := map[string]srvRun{}
		trace := filepath.Join(work, fmt.Sprintf("ftkit-%d.dat", round))
		udir := filepath.Join(work, fmt.Sprintf("uftrace-%d.data", round))
		udirNL := filepath.Join(work, fmt.Sprintf("uftrace-nolib-%d.data", round))
		cfgs := []string{"plain", "ftkit", "uftrace", "uftrace-nolib"}
		if round%2 == 1 {
			cfgs = []string{"uftrace-nolib", "uftrace", "ftkit", "plain"}
		}
		for _, cfg := range cfgs {
			var argv []string
			switch cfg {
			case "plain":
				argv = []string{bins["plain"]}
			case "ftkit":
				argv = []string{ftrace, "record", "-t", "function_graph", "--no-loss", "-o", trace, "--", bins["ftkit"]}
			case "uftrace":
				argv = []string{"uftrace", "record", "-d", udir, bins["uftrace"]}
			case "uftrace-nolib":
				argv = []string{"uftrace", "record", "--no-libcall", "-d", udirNL, bins["uftrace"]}
			}
			la := loadAvg()
			r := srvServe(b, work, argv, mc, conns, total, rate)
			runs[cfg] = r
			if strings.Contains(r.recOut, "LOST") {
				b.Errorf("%s lost records:\n%s", cfg, tail(r.recOut, 2000))
			}
			b.Logf("round %d %-7s load %s: load wall %.2f s, server CPU %.2f s + recorder %.2f s over the load; whole run %.2f s CPU, %.2f s wall, max RSS %d KB",
				round, cfg, la, r.wall.Seconds(), r.serverCPU.Seconds(), r.recCPU.Seconds(), r.totalCPU.Seconds(), r.totalWall.Seconds(), r.maxRSS)
		}
		base := runs["plain"].serverCPU.Seconds()
		baseTotal := runs["plain"].totalCPU.Seconds()
		for _, cfg := range []string{"ftkit", "uftrace", "uftrace-nolib"} {
			r := runs[cfg]
			b.Logf("round %d %-7s CPU over the load %.2fx untraced (server alone %.2fx), whole run %.2fx; load wall %.2fx",
				round, cfg, (r.serverCPU+r.recCPU).Seconds()/base, r.serverCPU.Seconds()/base,
				r.totalCPU.Seconds()/baseTotal, r.wall.Seconds()/runs["plain"].wall.Seconds())
		}

		// ftkit's trace: every event kept.
		events, lost := accInfo(b, trace)
		c, err := scanTrace(trace)
		if err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(trace)
		if err != nil {
			b.Fatal(err)
		}
		if lost != 0 || c.Lost() != 0 || c.Flags&8 != 0 || c.MissingBlocks != 0 || c.Flags&1 == 0 || c.Events() != events {
			b.Errorf("ftkit trace: ftrace info %d events, %d lost; scan %+v", events, lost, c)
		}
		b.Logf("round %d ftkit   trace %d bytes, %d events (%d entries, %d exits, %d threads), lost %d: %.2f bytes/event; %d blocks, %d PARTIAL chunks superseded (%d bytes); %s",
			round, fi.Size(), events, c.Entries, c.Exits, c.Threads, lost, float64(fi.Size())/float64(events),
			c.Blocks, c.Partial, c.PartialBytes, strings.TrimSpace(lastLine(runs["ftkit"].recOut)))
		for _, d := range []string{udir, udirNL} {
			all, dat := dirSize(d)
			recs := dat / 16
			b.Logf("round %d %s: %d bytes (%d in .dat files: %d records of 16 bytes): %.2f bytes/record",
				round, filepath.Base(d), all, dat, recs, float64(all)/float64(recs))
		}
		b.Logf("round %d ftrace report:  %s", round, timed(b, ftrace, "report", trace))
		b.Logf("round %d uftrace report: %s", round, timed(b, "uftrace", "report", "-d", udir))
		if round < rounds-1 {
			os.Remove(trace)
			os.RemoveAll(udir)
			os.RemoveAll(udirNL)
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
