//! The deliberate API that the command-line tools use: sst_dump and friends.
