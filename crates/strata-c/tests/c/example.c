/*
 * A program written against RocksDB's documented C API only (no Strata
 * names): it compiles against either library's rocksdb/c.h and links with
 * -lrocksdb or -lstrata_c unchanged. It is the README's C example.
 *
 * Usage: example <scratch-directory>
 */
#include <rocksdb/c.h>

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(char* err) {
  if (err != NULL) {
    fprintf(stderr, "error: %s\n", err);
    free(err);
    exit(1);
  }
}

int main(int argc, char** argv) {
  char db_path[512], backup_path[512], restore_path[512];
  snprintf(db_path, sizeof db_path, "%s/db", argc > 1 ? argv[1] : "/tmp");
  snprintf(backup_path, sizeof backup_path, "%s/backup", argc > 1 ? argv[1] : "/tmp");
  snprintf(restore_path, sizeof restore_path, "%s/restored", argc > 1 ? argv[1] : "/tmp");
  char* err = NULL;

  rocksdb_options_t* options = rocksdb_options_create();
  rocksdb_options_increase_parallelism(options, 2);
  rocksdb_options_optimize_level_style_compaction(options, 0);
  rocksdb_options_set_create_if_missing(options, 1);
  rocksdb_block_based_table_options_t* table = rocksdb_block_based_options_create();
  rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom(10));
  rocksdb_options_set_block_based_table_factory(options, table);

  rocksdb_t* db = rocksdb_open(options, db_path, &err);
  check(err);
  rocksdb_writeoptions_t* wo = rocksdb_writeoptions_create();
  rocksdb_readoptions_t* ro = rocksdb_readoptions_create();

  /* Writes: single and batched. */
  rocksdb_put(db, wo, "greeting", 8, "hello", 5, &err);
  check(err);
  rocksdb_writebatch_t* batch = rocksdb_writebatch_create();
  for (int i = 0; i < 100; i++) {
    char k[16], v[16];
    snprintf(k, sizeof k, "item%03d", i);
    snprintf(v, sizeof v, "%d", i * i);
    rocksdb_writebatch_put(batch, k, strlen(k), v, strlen(v));
  }
  rocksdb_write(db, wo, batch, &err);
  check(err);
  rocksdb_writebatch_destroy(batch);

  /* Reads. */
  size_t len;
  char* value = rocksdb_get(db, ro, "greeting", 8, &len, &err);
  check(err);
  assert(len == 5 && memcmp(value, "hello", 5) == 0);
  rocksdb_free(value);

  /* A range scan. */
  rocksdb_iterator_t* it = rocksdb_create_iterator(db, ro);
  int n = 0;
  for (rocksdb_iter_seek(it, "item050", 7); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
    const char* k = rocksdb_iter_key(it, &len);
    if (len < 4 || memcmp(k, "item", 4) != 0) break;
    n++;
  }
  rocksdb_iter_get_error(it, &err);
  check(err);
  rocksdb_iter_destroy(it);
  assert(n == 50);

  /* Back up, then restore into another directory. */
  rocksdb_backup_engine_t* be = rocksdb_backup_engine_open(options, backup_path, &err);
  check(err);
  rocksdb_backup_engine_create_new_backup(be, db, &err);
  check(err);
  rocksdb_close(db);
  rocksdb_restore_options_t* restore = rocksdb_restore_options_create();
  rocksdb_backup_engine_restore_db_from_latest_backup(be, restore_path, restore_path, restore, &err);
  check(err);
  rocksdb_restore_options_destroy(restore);
  rocksdb_backup_engine_close(be);

  db = rocksdb_open(options, restore_path, &err);
  check(err);
  value = rocksdb_get(db, ro, "item007", 7, &len, &err);
  check(err);
  assert(len == 2 && memcmp(value, "49", 2) == 0);
  rocksdb_free(value);
  rocksdb_close(db);

  rocksdb_writeoptions_destroy(wo);
  rocksdb_readoptions_destroy(ro);
  rocksdb_block_based_options_destroy(table);
  rocksdb_options_destroy(options);
  printf("example: ok\n");
  return 0;
}
