#!/bin/sh
# Stands in for the Prisma schema engine, which `prisma generate` does not need.
exit 1
