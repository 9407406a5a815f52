"""Citation markers: answers split into cited sentences, and the citations they point at."""
