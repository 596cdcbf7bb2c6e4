// Package sshtest starts a real OpenSSH server (/usr/sbin/sshd) for tests:
// on 127.0.0.1 and a free port, with a throwaway host key and user key in
// the test's temporary directory, logging in as the current user.
//
// Tests that need it skip with a message when sshd (or ssh, ssh-keygen)
// is not installed, unless WEBCODEX_REQUIRE_SSHD=1, when they fail: CI sets
// it, so a missing sshd there is a failure, never a silent skip.
//
// The server is built on unix systems only.
package sshtest
