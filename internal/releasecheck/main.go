package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePrefix is the root module's path; every nested module's path is this
// plus its directory.
const modulePrefix = "github.com/timebudget/budget"

// manifestPath is where the releases are listed, relative to the repository.
const manifestPath = ".ci/releases"

func main() {
	repo := flag.String("repo", "", "the repository's root (default: the git top level of the working directory)")
	proxy := flag.String("proxy", "", "write the module proxy into this directory and keep it (default: a temporary directory, removed at the end)")
	proxyOnly := flag.Bool("proxy-only", false, "check the tree and build the proxy, but do not install anything")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: releasecheck [-repo DIR] [-proxy DIR] [-proxy-only]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*repo, *proxy, *proxyOnly); err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
}

func run(repo, proxy string, proxyOnly bool) error {
	if repo == "" {
		top, err := git("", "rev-parse", "--show-toplevel")
		if err != nil {
			return fmt.Errorf("not inside a git repository (give -repo): %w", err)
		}
		repo = top
	}
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	releases, err := readManifest(repo)
	if err != nil {
		return err
	}
	if err := checkTree(repo, releases); err != nil {
		return err
	}
	fmt.Printf("release: tree clean (no tracked file over 1 MB, every file name valid in a module zip, no replace directive, every requirement of a budget module names a release)\n")

	if proxy == "" {
		tmp, err := os.MkdirTemp("", "budget-proxy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		proxy = tmp
	} else if proxy, err = filepath.Abs(proxy); err != nil {
		return err
	}
	sums, err := buildProxy(repo, proxy, releases)
	if err != nil {
		return err
	}
	fmt.Printf("release: module proxy with %d versions at file://%s\n", len(releases), proxy)
	if err := checkSums(repo, sums); err != nil {
		return err
	}
	if proxyOnly {
		return nil
	}
	if err := installAsStranger(repo, proxy, releases); err != nil {
		return err
	}
	return installFromReadme(repo, releases)
}

// git runs git in dir and returns its trimmed standard output.
func git(dir string, args ...string) (string, error) {
	out, err := gitBytes(dir, args...)
	return strings.TrimSpace(string(out)), err
}

func gitBytes(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// errList joins several findings into one error, one per line.
func errList(what string, items []string) error {
	if len(items) == 0 {
		return nil
	}
	return errors.New(what + ":\n\t" + strings.Join(items, "\n\t"))
}
