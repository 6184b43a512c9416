#!/usr/bin/env bash
# Nightly database backup: pg_dump, gzip, keep fourteen days.
set -euo pipefail

BACKUP_DIR=${BACKUP_DIR:-/var/backups/bookshop}
KEEP_DAYS=14
stamp=$(date +%Y%m%d-%H%M%S)

mkdir -p "$BACKUP_DIR"
pg_dump --no-owner "$BOOKSHOP_DATABASE_URL" | gzip -9 > "$BACKUP_DIR/bookshop-$stamp.sql.gz"
find "$BACKUP_DIR" -name 'bookshop-*.sql.gz' -mtime +"$KEEP_DAYS" -delete
echo "backup written: $BACKUP_DIR/bookshop-$stamp.sql.gz"
