//go:build !linux

package main

import "syscall"

// childAttr: elsewhere than Linux a child ends when its stdin does.
func childAttr() *syscall.SysProcAttr { return nil }
