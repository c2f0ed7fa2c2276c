package store

// DropDeadBatches removes those of the staging partials ids that no process holds
// (PartialLister.DropDeadBatches): each is taken without waiting (try), and removed (remove)
// only when its info, read under the lock, still says it is a batch's staging partial; one
// another process holds is a running batch's, and is left.
func DropDeadBatches[P HeldPartial](ids []string, try func(id string) (P, error), remove func(P)) {
	for _, id := range ids {
		p, err := try(id)
		if err != nil {
			continue
		}
		if p.Meta().Batch {
			remove(p)
		} else {
			p.Close()
		}
	}
}
