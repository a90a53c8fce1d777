BlossesJ*§@v
@.@—Wó?