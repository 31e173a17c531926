"""The rules engine: cards, hands, paytables and the settlement of every wager. Pure: no I/O, no clock."""
