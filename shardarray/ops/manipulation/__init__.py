"""The named ops, manipulation: rename/transpose/astype/broadcast, reshape, dims, flip/pad/roll, repeat, concat,
diff, reshard."""
