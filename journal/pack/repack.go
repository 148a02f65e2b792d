package pack

import "sort"

// MaxUnused is the share of the sealed packs' bytes that may be unused
// (named by no index entry) before a repack: the packs then take at
// most 1/(1-MaxUnused) = 1.25 times the bytes the index needs.
const MaxUnused = 0.2

// Use is what the index says of one pack.
type Use struct {
	ID     uint64
	Size   int64 // file length
	Live   int64 // bytes of the entries the index names
	Unused int64 // Size - header - Live
}

// NewUse returns the use of pack id of size bytes, live of which the
// index names.
func NewUse(id uint64, size, live int64) Use {
	return Use{ID: id, Size: size, Live: live, Unused: max(0, size-HeaderSize-live)}
}

// PlanRepack picks the packs to repack, most unused first, until no
// more than MaxUnused of what is left would be unused. It reorders
// uses.
//
// Repacking a pack (restic's prune: plan from the index, copy, switch,
// delete) is the caller's, in this order, each step safe against a
// crash: copy its live entries into the pack being written (AddEntry)
// and make the copies durable (SyncPack) — a crash here leaves unused
// copies; switch the index to the copies, each entry only if it still
// names the old place — a crash after leaves the old pack with nothing
// live; make that index durable, then Remove the pack.
func PlanRepack(uses []Use) []Use {
	var total, unused float64
	for _, u := range uses {
		total += float64(u.Size)
		unused += float64(u.Unused)
	}
	sort.Slice(uses, func(a, b int) bool { return uses[a].Unused > uses[b].Unused })
	var plan []Use
	for _, u := range uses {
		if unused <= MaxUnused*total || u.Unused == 0 {
			break
		}
		plan = append(plan, u)
		// Its live bytes move to a new pack; its unused bytes go.
		total -= float64(u.Unused + HeaderSize)
		unused -= float64(u.Unused)
	}
	return plan
}
