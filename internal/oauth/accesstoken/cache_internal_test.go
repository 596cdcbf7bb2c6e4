package accesstoken

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"
)

func TestResultCacheBounds(t *testing.T) {
	if MaxCachedTokens != 4096 || ResultLifetime != time.Minute {
		t.Fatalf("MaxCachedTokens = %d, ResultLifetime = %v", MaxCachedTokens, ResultLifetime)
	}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var r results
	key := func(i int) (k [sha256.Size]byte) {
		binary.BigEndian.PutUint64(k[:], uint64(i))
		return k
	}
	long := Access{Subject: "s", Expiry: now.Add(time.Hour)}
	for i := range MaxCachedTokens {
		r.put(key(i), long, now)
	}
	if r.len() != MaxCachedTokens {
		t.Fatalf("len = %d", r.len())
	}
	r.put(key(MaxCachedTokens), long, now)
	if r.len() != 1 {
		t.Fatalf("a full cache was not emptied: len = %d", r.len())
	}
	if _, ok := r.get(key(0), now); ok {
		t.Fatal("an entry survived emptying")
	}
	if _, ok := r.get(key(MaxCachedTokens), now.Add(ResultLifetime-time.Nanosecond)); !ok {
		t.Fatal("an entry within its lifetime was dropped")
	}
	if _, ok := r.get(key(MaxCachedTokens), now.Add(ResultLifetime)); ok {
		t.Fatal("an entry outlived ResultLifetime")
	}
	short := Access{Subject: "s", Expiry: now.Add(time.Second)}
	r.put(key(1), short, now)
	if _, ok := r.get(key(1), now.Add(time.Second)); ok {
		t.Fatal("an entry outlived its token's exp")
	}
}
