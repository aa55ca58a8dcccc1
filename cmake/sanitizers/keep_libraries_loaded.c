/* Preloaded into the ASan build's MPI tests (never into a program users run): dlclose() does
 * nothing, so the Open MPI components that MPI_Finalize unloads stay mapped until the process
 * ends. LeakSanitizer reports at exit; a component still mapped then has a name, which
 * lsan.supp can match, where an unloaded one is an `<unknown module>` that no suppression
 * matches. This lets the tests keep ASan's fast unwinder: the slow one, the alternative,
 * costs every malloc several times its price. */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
