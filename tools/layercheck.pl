#!/usr/bin/env perl
# SPDX-License-Identifier: BSD-3-Clause
# layercheck.pl [SRC]
#     Keeps the map of the code true (ctest: layers).  SRC is the top of
#     the tree (default: this file's ../).
#   1. Every shim/<layer>/*.c file has its line in shim/dl.h's map and its
#      row in docs/ARCHITECTURE.md's "Files by layer" table; every
#      shim/preload/*.c file its line in shim/preload/preload.h's map and
#      its row in ARCHITECTURE.md's table of the interposer's files.  A
#      file named by a map or a table that is not there is stale.
#   2. No file of a layer includes a header of a layer above it, by the
#      order api > prim > core > script > conn > base (the interposer,
#      shim/preload, is above them all and nothing below includes its
#      headers; nothing in shim/ includes one of tools/).
# Exit 0 when all holds; else one line per finding, and 1.
use strict;
use warnings;
use File::Basename qw(dirname basename);
use Cwd qw(abs_path);

my $src = abs_path($ARGV[0] // dirname(abs_path($0)) . '/..');
my @layers = qw(api prim core script conn base);    # top to bottom
my %rank;
@rank{@layers} = reverse 0 .. $#layers;              # base 0 ... api 5
$rank{preload} = 6;
my @bad;

sub slurp { my $f = shift; open(my $h, '<', $f) or die "layercheck: $f: $!\n"; local $/; <$h> }
sub files_in { my ($dir, $ext) = @_; map { basename($_) } glob("$src/$dir/*.$ext") }

# A list of names as a map or a table writes them: "a.c, b.c",
# "call_<name>.{h,c}", "wrap_mutex.c, wrap_rwlock.c"; anything else (words,
# code) is not a name.
sub names_of {
    my @n;
    for my $t (split /;\s*|,\s+|\s+/, shift) {
        $t =~ s/`//g;
        if ($t =~ /^([a-z_<>]+)\.\{([a-z,]+)\}$/) { push @n, map { "$1.$_" } split /,/, $2 }
        elsif ($t =~ /^[a-z_<>]+\.[ch]$/) { push @n, $t }
    }
    return @n;
}

# Does the documented name $n stand for the file $f ("call_<name>.c" stands
# for every call_*.c)?
sub covers {
    my ($n, $f) = @_;
    return $n eq $f unless $n =~ /<name>/;
    (my $re = quotemeta $n) =~ s/\\<name\\>/[a-z_]+/;
    return $f =~ /^$re$/;
}

# Compares the files of a folder with the names a document gives for it.
sub compare {
    my ($doc, $dir, $named) = @_;
    my @c = files_in($dir, 'c');
    my %exists = map { $_ => 1 } @c, files_in($dir, 'h');
    for my $f (@c) {
        push @bad, "$doc: no entry for $dir/$f" unless grep { covers($_, $f) } @$named;
    }
    for my $n (@$named) {
        next if $n =~ /<name>/ ? grep { covers($n, $_) } keys %exists : $exists{$n};
        push @bad, "$doc: $dir/$n is named but not there (stale)";
    }
}

# --- shim/dl.h: " * api/ ..." starts a folder; " *   name.c   what" an entry.
{
    my (%named, $dir);
    for (split /\n/, slurp("$src/shim/dl.h")) {
        if (/^ \* ([a-z]+)\/\s/) { $dir = $1; next }
        next unless $dir && exists $rank{$dir} && $dir ne 'preload';
        if (/^ \*   (\S.*?)(?:\s{2,}|$)/) { push @{ $named{$dir} }, names_of($1) }
    }
    compare('shim/dl.h', "shim/$_", $named{$_} // []) for @layers;
}

# --- shim/preload/preload.h: " *   name.c   what" entries.
{
    my @named;
    for (split /\n/, slurp("$src/shim/preload/preload.h")) {
        last if /^\*\//;
        push @named, names_of($1) if /^ \*   ([a-z_]+\.c)\s/;
    }
    compare('shim/preload/preload.h', 'shim/preload', \@named);
}

# --- docs/ARCHITECTURE.md: "Files by layer" (| Folder | File | Holds |),
# and the interposer's (| File | What it holds |).
{
    my $md = slurp("$src/docs/ARCHITECTURE.md");
    my ($by_layer) = $md =~ /^## Files by layer\n(.*?)^## /ms;
    my ($preload) = $md =~ /^## The interposer: one table per kind\n(.*?)^## /ms;
    my (%named, $dir);
    for (split /\n/, $by_layer // '') {
        next unless /^\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|/;
        my ($folder, $files) = ($1, $2);
        $dir = $1 if $folder =~ /^([a-z]+)\/$/;
        push @{ $named{$dir} }, names_of($files) if $dir;
    }
    compare('ARCHITECTURE.md (Files by layer)', "shim/$_", $named{$_} // []) for @layers;
    my @pl;
    for (split /\n/, $preload // '') {
        push @pl, names_of($1) if /^\|\s*([^|]*?\.[ch][^|]*?)\s*\|/;
    }
    compare('ARCHITECTURE.md (the interposer)', 'shim/preload', \@pl);
}

# --- includes: a header's layer is the folder it is in; generated headers
# (dl_scripts.c's list) are script/'s, shim/dl.h base's.
{
    my %layer_of = ('dl.h' => 'base', 'dl_script_list.h' => 'script');
    for my $l (@layers, 'preload') { $layer_of{$_} //= $l for files_in("shim/$l", 'h') }
    my %tools = map { basename($_) => 1 } glob("$src/tools/*/*.h"), glob("$src/tools/*.h");
    for my $l (@layers, 'preload') {
        for my $f (files_in("shim/$l", 'c'), files_in("shim/$l", 'h')) {
            for (split /\n/, slurp("$src/shim/$l/$f")) {
                next unless /^\s*#\s*include\s+"([^"]+)"/;
                my $h = basename($1);
                if (my $hl = $layer_of{$h}) {
                    push @bad, "shim/$l/$f includes $h, of $hl/ above it"
                        if $rank{$hl} > $rank{$l};
                } elsif ($tools{$h}) {
                    push @bad, "shim/$l/$f includes $h, of tools/";
                }
            }
        }
    }
}

print "$_\n" for @bad;
exit(@bad ? 1 : 0);
