/** The consumer as a module: it reads io.fdpblock, which must export what Main uses. */
module consumer {
    requires io.fdpblock;
}
